/**
 * @jest-environment jsdom
 */
import * as React from 'react';
import { act } from 'react';
import { createRoot } from 'react-dom/client';

import { SyncSection } from './view';
import { RanktableModel } from '../connections/model';
import { postJSON, requestAPI } from '../api/request';
import { FakeStream, trans, type } from '../testing/fakes';

jest.mock('../api/request', () => ({
  requestAPI: jest.fn(),
  postJSON: jest.fn(),
  RanktableAPIError: class extends Error {}
}));

(globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;

function choose(select: HTMLSelectElement, value: string): void {
  act(() => {
    select.value = value;
    select.dispatchEvent(new Event('change', { bubbles: true }));
  });
}

describe('SyncSection', () => {
  it('shows the folder each profile remembers, keeps what was typed, and uploads that folder', async () => {
    const stream = new FakeStream();
    const model = new RanktableModel(stream as any);
    model.profiles = [
      {
        name: 'nb-a',
        host: 'a',
        remote_dir: '~/work',
        local_dir: 'projects/bert'
      },
      { name: 'nb-b', host: 'b', remote_dir: '~/work', local_dir: null }
    ];
    const host = document.createElement('div');
    document.body.appendChild(host);
    const root = createRoot(host);
    act(() => {
      root.render(<SyncSection model={model} trans={trans} />);
    });
    const folder = () =>
      host.querySelector<HTMLInputElement>('[data-field="sync-local"] input')!;
    const profile = host.querySelector<HTMLSelectElement>(
      '[data-field="sync-profile"] select'
    )!;
    expect(folder().value).toBe('projects/bert');

    // a profile that never synced starts at the Jupyter root
    choose(profile, 'nb-b');
    expect(folder().value).toBe('.');
    type(folder(), 'other');
    choose(profile, 'nb-a');
    expect(folder().value).toBe('projects/bert');
    choose(profile, 'nb-b');
    expect(folder().value).toBe('other');

    (postJSON as jest.Mock).mockResolvedValue({ operation: 'op-1' });
    (requestAPI as jest.Mock).mockResolvedValue({ profiles: model.profiles });
    const upload = Array.from(host.querySelectorAll('button')).find(
      b => b.textContent === 'Upload now'
    )!;
    await act(async () => {
      upload.click();
    });
    expect(postJSON).toHaveBeenCalledWith('sync', {
      profile: 'nb-b',
      local_dir: 'other',
      force: []
    });
    expect(stream.last().params).toEqual({ operation: 'op-1' });
    act(() => root.unmount());
  });
});
