import { RemoteKernelsModel } from './model';
import {
  fingerprintMatches,
  normalizeFingerprint,
  trustNewHostKey
} from '../connections/hostkey';
import { postJSON, requestAPI } from '../api/request';

jest.mock('../api/request', () => jest.requireActual('../testing/requestmock'));

const request = requestAPI as jest.Mock;
const post = postJSON as jest.Mock;

beforeEach(() => {
  request.mockReset();
  post.mockReset();
});

describe('RemoteKernelsModel', () => {
  it('lists kernels, attaches a detached one and shuts one down', async () => {
    const model = new RemoteKernelsModel();
    const k = (id: string, attached: boolean) => ({
      kernel_id: id,
      profile: 'nb',
      attached
    });
    request.mockResolvedValueOnce({ kernels: [k('k1', false), k('k2', true)] });
    await model.refresh();
    expect(request).toHaveBeenLastCalledWith('remote-kernels');
    expect(model.kernels.map(x => x.attached)).toEqual([false, true]);

    post.mockResolvedValueOnce({ kernel_id: 'k1', attached: true });
    request.mockResolvedValueOnce({ kernels: [k('k1', true), k('k2', true)] });
    await model.attach('k1');
    expect(post).toHaveBeenCalledWith('remote-kernels/k1/attach', {});
    expect(model.kernels.every(x => x.attached)).toBe(true);

    request
      .mockResolvedValueOnce({ kernel_id: 'k2', shut_down: true })
      .mockResolvedValueOnce({ kernels: [k('k1', true)] });
    await model.shutdown('k2');
    expect(request).toHaveBeenCalledWith('remote-kernels/k2', {
      method: 'DELETE'
    });
    expect(model.kernels.map(x => x.kernel_id)).toEqual(['k1']);
  });
});

describe('host-key rotation', () => {
  const presented = 'SHA256:AbCdEf0123456789abcdefABCDEF0123456789abcde';

  it('accepts the fingerprint typed or pasted, with or without its key type', () => {
    expect(fingerprintMatches(presented, presented)).toBe(true);
    expect(fingerprintMatches(`  ${presented}\n`, presented)).toBe(true);
    expect(fingerprintMatches(`ssh-ed25519 ${presented}`, presented)).toBe(
      true
    );
    expect(normalizeFingerprint(`ED25519 ${presented}`)).toBe(presented);
  });

  it('refuses anything else: another key, a different case, a prefix, nothing', () => {
    expect(fingerprintMatches(presented.toLowerCase(), presented)).toBe(false);
    expect(fingerprintMatches(presented.slice(0, -1), presented)).toBe(false);
    expect(fingerprintMatches('', presented)).toBe(false);
    expect(fingerprintMatches(presented, '')).toBe(false);
  });

  it('POSTs replace_host_key only when the typed fingerprint matches', async () => {
    await expect(
      trustNewHostKey('nb', 'SHA256:other', { presented })
    ).rejects.toThrow(/replace_host_key/);
    expect(post).not.toHaveBeenCalled();
    post.mockResolvedValueOnce({ status: 'ok', message: 'connected' });
    const result = await trustNewHostKey(
      'my nb',
      ` ssh-ed25519 ${presented} `,
      {
        presented
      }
    );
    expect(post).toHaveBeenCalledWith('profiles/my%20nb/test', {
      replace_host_key: presented
    });
    expect(result.status).toBe('ok');
  });
});
