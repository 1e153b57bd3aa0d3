/**
 * @jest-environment jsdom
 */
import * as React from 'react';
import { act } from 'react';
import { createRoot } from 'react-dom/client';

import { ConnectionsSection } from './view';
import { RanktableModel } from './model';
import { requestAPI } from '../api/request';
import { FakeStream, trans } from '../testing/fakes';

jest.mock('@jupyterlab/apputils', () => ({
  Dialog: {
    cancelButton: jest.fn(),
    okButton: jest.fn(),
    warnButton: jest.fn()
  },
  showDialog: jest.fn()
}));
jest.mock('@lumino/widgets', () => ({ Widget: class {} }));
jest.mock('../api/request', () => jest.requireActual('../testing/requestmock'));

(globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;

describe('ConnectionsSection', () => {
  it('says "connected" of a profile the server holds a live connection to, "not tested" otherwise', async () => {
    const profiles = [
      { name: 'live', host: 'a', remote_dir: '~/work', connected: true },
      { name: 'idle', host: 'b', remote_dir: '~/work', connected: false }
    ];
    (requestAPI as jest.Mock).mockResolvedValue({ profiles, invalid: [] });
    const model = new RanktableModel(new FakeStream() as any);
    const host = document.createElement('div');
    document.body.appendChild(host);
    const root = createRoot(host);
    await act(async () => {
      root.render(<ConnectionsSection model={model} trans={trans} />);
    });
    const badge = (name: string) =>
      host.querySelector(`[data-profile="${name}"] .jp-Ranktable-badge`)!
        .textContent;
    expect(badge('live')).toBe('connected');
    expect(badge('idle')).toBe('not tested');
    act(() => model.setStatus('idle', 'error', 'refused'));
    expect(badge('idle')).toBe('failed'); // what this page saw wins
    act(() => root.unmount());
  });
});
