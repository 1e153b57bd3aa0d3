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

jest.mock('./dialogs', () => ({
  askDownload: jest.fn(),
  askSyncMode: jest.fn(),
  modeLabel: (_: unknown, mode: string) => mode
}));
jest.mock('../api/request', () => jest.requireActual('../testing/requestmock'));

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

  it('says where sync goes (the shared folder) and its upload mode on one line', () => {
    const model = new RanktableModel(new FakeStream() as any);
    model.profiles = [
      {
        name: 'nb',
        host: 'a',
        remote_dir: '~/work',
        working_dir: '/home/ma-user/shared',
        local_dir: null,
        sync: { upload: 'always' }
      }
    ];
    const host = document.createElement('div');
    document.body.appendChild(host);
    const root = createRoot(host);
    act(() => {
      root.render(<SyncSection model={model} trans={trans} />);
    });
    const dest = host.querySelector('.jp-Ranktable-syncDest')!;
    expect(dest.getAttribute('title')).toBe('nb:/home/ma-user/shared');
    expect(dest.textContent).not.toContain('~/work');
    const lines = Array.from(host.querySelectorAll('.jp-Ranktable-syncLine'));
    // the mode's choices are in the Settings… dialog, which has room for them
    expect(lines.map(l => l.textContent).join(' ')).toMatch(
      /Automatic upload: always/i
    );
    act(() => root.unmount());
  });
});
