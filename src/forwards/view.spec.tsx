/**
 * @jest-environment jsdom
 */
import * as React from 'react';
import { act } from 'react';
import { createRoot, Root } from 'react-dom/client';

import { ForwardsSection } from './view';
import { RanktableModel } from '../connections/model';
import { PageConfig } from '@jupyterlab/coreutils';

import { ForwardsModel } from './model';
import { requestAPI } from '../api/request';
import { FakeStream, trans } from '../testing/fakes';

jest.mock('../api/request', () => jest.requireActual('../testing/requestmock'));

(globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;

const flush = () => act(() => new Promise(resolve => setTimeout(resolve, 0)));

/** Mounts the section on a fresh model and waits for its first listing (mocked by the caller). */
async function renderForwards(): Promise<{ host: HTMLElement; root: Root }> {
  const model = new RanktableModel(new FakeStream() as any);
  const forwards = new ForwardsModel();
  const host = document.createElement('div');
  document.body.appendChild(host);
  const root = createRoot(host);
  act(() => {
    root.render(
      <ForwardsSection model={model} trans={trans} forwards={forwards} />
    );
  });
  await flush();
  return { host, root };
}

describe('ForwardsSection', () => {
  it("shows another process's forward with its pid and closes it through its ID@PID", async () => {
    const request = requestAPI as jest.Mock;
    const mine = {
      id: 'fwd-1',
      profile: 'nb',
      remote_port: 6006,
      local_port: 40001,
      url: 'http://127.0.0.1:40001/',
      bind: '127.0.0.1' as const
    };
    const theirs = {
      ...mine,
      id: 'fwd-1@4242',
      local_port: 40002,
      url: 'http://127.0.0.1:40002/',
      pid: 4242,
      owner: 'another process' as const
    };
    request.mockResolvedValue({ forwards: [mine, theirs] });
    const { host, root } = await renderForwards();
    const rows = [...host.querySelectorAll<HTMLElement>('[data-forward]')];
    expect(rows.map(r => r.dataset.forward)).toEqual(['fwd-1', 'fwd-1@4242']);
    expect(rows[0].textContent).not.toContain('another process');
    expect(rows[1].textContent).toContain('(another process, pid 4242)');
    request
      .mockResolvedValueOnce(theirs)
      .mockResolvedValue({ forwards: [mine] });
    const close = [...rows[1].querySelectorAll('button')].find(
      b => b.textContent === 'Close'
    )!;
    act(() => close.click());
    await flush();
    expect(request).toHaveBeenCalledWith('forwards/fwd-1%404242', {
      method: 'DELETE'
    });
    expect(
      [...host.querySelectorAll<HTMLElement>('[data-forward]')].map(
        r => r.dataset.forward
      )
    ).toEqual(['fwd-1']);
    act(() => root.unmount());
  });

  it("links this server's forward to its authenticated proxy path, never a 127.0.0.1 port", async () => {
    PageConfig.setOption('baseUrl', 'http://localhost:8888/lab-user/');
    const request = requestAPI as jest.Mock;
    request.mockReset();
    const mine = {
      id: 'fwd-3',
      profile: 'nb',
      remote_port: 6006,
      local_port: 0,
      url: '/lab-user/ranktable/forwards/fwd-3/proxy/',
      proxy_path: '/ranktable/forwards/fwd-3/proxy/',
      socket: '/home/u/.local/share/jupyter/ranktable/fwd/1-fwd-3.sock',
      bind: 'unix' as const
    };
    const theirs = {
      ...mine,
      id: 'fwd-1@4242',
      url: 'unix:/home/u/.local/share/jupyter/ranktable/fwd/4242-fwd-1.sock',
      proxy_path: undefined,
      pid: 4242,
      owner: 'another process' as const
    };
    request.mockResolvedValue({ forwards: [mine, theirs] });
    const { host, root } = await renderForwards();
    const rows = [...host.querySelectorAll<HTMLElement>('[data-forward]')];
    const link = rows[0].querySelector('a')!;
    const proxied =
      'http://localhost:8888/lab-user/ranktable/forwards/fwd-3/proxy/';
    expect(link.getAttribute('href')).toBe(proxied);
    expect(link.getAttribute('target')).toBe('_blank');
    expect(rows[0].querySelector('.jp-Ranktable-forwardUrl')!.textContent).toBe(
      proxied
    );
    // another server's Unix-socket forward: nothing this server could open
    expect(rows[1].querySelector('a')).toBeNull();
    act(() => root.unmount());
  });
});
