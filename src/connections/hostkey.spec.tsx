/**
 * @jest-environment jsdom
 */
import * as React from 'react';
import { act } from 'react';
import { createRoot } from 'react-dom/client';

import { HostKeyChanged } from './hostkeyview';
import { postJSON } from '../api/request';
import { trans, type } from '../testing/fakes';

jest.mock('../api/request', () => jest.requireActual('../testing/requestmock'));

(globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;

const RECORDED = 'SHA256:oldOLDold0123456789oldOLDold0123456789old';
const PRESENTED = 'SHA256:newNEWnew0123456789newNEWnew0123456789new';

describe('HostKeyChanged', () => {
  it('shows both fingerprints and trusts the new key only once it is typed exactly', async () => {
    const trusted: string[] = [];
    (postJSON as jest.Mock).mockResolvedValueOnce({
      status: 'ok',
      message: 'connected to 127.0.0.1:2222'
    });
    const host = document.createElement('div');
    document.body.appendChild(host);
    const root = createRoot(host);
    act(() =>
      root.render(
        <HostKeyChanged
          profile="nb"
          trans={trans}
          result={{
            status: 'host-key-changed',
            message: 'HOST KEY CHANGED',
            host: '127.0.0.1:2222',
            key_type: 'ssh-ed25519',
            recorded: RECORDED,
            presented: PRESENTED
          }}
          onTrusted={r => trusted.push(r.status)}
        />
      )
    );
    expect(
      host.querySelector('[data-fingerprint="recorded"]')!.textContent
    ).toBe(RECORDED);
    expect(
      host.querySelector('[data-fingerprint="presented"]')!.textContent
    ).toContain(PRESENTED);
    // nothing to type into, nothing sent, until the user asks for the step
    expect(host.querySelector('input')).toBeNull();
    const ask = Array.from(host.querySelectorAll('button')).find(b =>
      b.textContent!.includes('instance was recreated')
    )!;
    act(() => ask.click());
    const input = host.querySelector('input')!;
    const trust = () =>
      Array.from(host.querySelectorAll('button')).find(
        b => b.textContent === 'Trust the new key'
      )!;
    expect(trust().disabled).toBe(true);
    type(input, RECORDED);
    expect(trust().disabled).toBe(true);
    expect(host.textContent).toContain('does not match');
    type(input, PRESENTED.slice(0, -2));
    expect(trust().disabled).toBe(true);
    expect(postJSON).not.toHaveBeenCalled();
    type(input, ` ${PRESENTED} `);
    expect(trust().disabled).toBe(false);
    await act(async () => trust().click());
    expect(postJSON).toHaveBeenCalledWith('profiles/nb/test', {
      replace_host_key: PRESENTED
    });
    expect(trusted).toEqual(['ok']);
    act(() => root.unmount());
  });
});
