/**
 * @jest-environment jsdom
 */
/** Every sidebar section follows the user's rights (#30.2): a read-only user's write buttons are
 * disabled, with the reason as their title, once the rights are read. */
import * as React from 'react';
import { act } from 'react';
import { createRoot } from 'react-dom/client';

import { PermissionsModel } from './model';
import { RightsContext, useWhyNot } from './view';
import { requestAPI } from '../api/request';

jest.mock('../api/request', () => jest.requireActual('../testing/requestmock'));

(globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;

/** A section's write and execute buttons, as the sidebar's sections use the hook. */
function Buttons(): JSX.Element {
  const readOnly = useWhyNot('write');
  const noExecute = useWhyNot('execute');
  return (
    <>
      <button disabled={!!readOnly} title={readOnly || undefined}>
        Add profile…
      </button>
      <button disabled={!!noExecute} title={noExecute || undefined}>
        Forward
      </button>
    </>
  );
}

it('a read-only user cannot add an SSH profile nor open a tunnel, and is told why', async () => {
  (requestAPI as jest.Mock).mockImplementation(async (endPoint: string) =>
    endPoint === 'permissions'
      ? {
          namespace: 'u-alice',
          jupyter: { read: true, write: false, execute: false }
        }
      : { profiles: [] }
  );
  const rights = new PermissionsModel();
  const host = document.createElement('div');
  document.body.appendChild(host);
  const root = createRoot(host);
  await act(async () => {
    root.render(
      <RightsContext.Provider value={rights}>
        <Buttons />
      </RightsContext.Provider>
    );
  });
  const [add, forward] = [0, 1].map(
    i => () => host.querySelectorAll('button')[i]
  );
  expect(add().disabled).toBe(false); // rights not read yet: nothing disabled
  await act(async () => rights.load());
  expect(add().disabled).toBe(true);
  expect(add().title).toMatch(/^Read-only: /);
  expect(forward().disabled).toBe(true);
  expect(forward().title).toContain('does not include execute');
  act(() => root.unmount());
  (requestAPI as jest.Mock).mockReset();
});
