import { ForwardsModel, parsePort } from './model';
import { ServerConnection } from '@jupyterlab/services';

import { RanktableAPIError, postJSON, requestAPI } from '../api/request';
import { UNREACHABLE } from '../api/errors';

jest.mock('../api/request', () => jest.requireActual('../testing/requestmock'));

const request = requestAPI as jest.Mock;
const post = postJSON as jest.Mock;

const forward = (id: string, remote: number, local: number) => ({
  id,
  profile: 'nb',
  remote_port: remote,
  local_port: local,
  url: `http://127.0.0.1:${local}/`,
  bind: '127.0.0.1'
});

beforeEach(() => {
  request.mockReset();
  post.mockReset();
});

describe('ForwardsModel', () => {
  it('says the server cannot be reached while it is down (not "Failed to fetch"), keeps the list, then clears', async () => {
    const model = new ForwardsModel();
    request.mockResolvedValueOnce({ forwards: [forward('a', 6006, 40001)] });
    await model.refresh();
    request.mockRejectedValueOnce(
      new ServerConnection.NetworkError(new TypeError('Failed to fetch'))
    );
    await model.refresh();
    expect(model.error).toBe(UNREACHABLE);
    expect(model.forwards).toHaveLength(1); // the last good list stays
    request.mockRejectedValueOnce(new Error('disk full')); // any other error says what it is
    await model.refresh();
    expect(model.error).toBe('disk full');
    request.mockResolvedValueOnce({ forwards: [] });
    await model.refresh();
    expect(model.error).toBe('');
  });

  it('lists, opens and closes forwards, reloading the list after each action', async () => {
    const model = new ForwardsModel();
    let changes = 0;
    model.changed.connect(() => changes++);
    request.mockResolvedValueOnce({ forwards: [forward('a', 6006, 40001)] });
    await model.refresh();
    expect(request).toHaveBeenLastCalledWith('forwards');
    expect(model.forwards.map(f => f.url)).toEqual(['http://127.0.0.1:40001/']);

    post.mockResolvedValueOnce(forward('b', 8080, 40002));
    request.mockResolvedValueOnce({
      forwards: [forward('a', 6006, 40001), forward('b', 8080, 40002)]
    });
    const opened = await model.open('nb', ' 8080 ');
    expect(post).toHaveBeenCalledWith('forwards', {
      profile: 'nb',
      remote_port: 8080
    });
    expect(opened.id).toBe('b');
    expect(model.forwards).toHaveLength(2);
    expect(model.busy).toBe('');

    request
      .mockResolvedValueOnce(forward('a', 6006, 40001))
      .mockResolvedValueOnce({ forwards: [forward('b', 8080, 40002)] });
    await model.close('a');
    expect(request).toHaveBeenCalledWith('forwards/a', { method: 'DELETE' });
    expect(model.forwards.map(f => f.id)).toEqual(['b']);
    expect(changes).toBeGreaterThanOrEqual(5);
  });

  it('names the field and the limit for a bad port, without calling the server', () => {
    const model = new ForwardsModel();
    for (const bad of ['', '0', '65536', '80.5', 'tb']) {
      expect(() => model.open('nb', bad)).toThrow(/remote_port.*1 to 65535/);
    }
    expect(() => model.open('nb', '6006', '70000')).toThrow(/local_port/);
    expect(() => model.open('', '6006')).toThrow(/profile/);
    expect(post).not.toHaveBeenCalled();
    let field: string | null = '';
    try {
      parsePort('x', 'remote_port');
    } catch (e) {
      field = (e as RanktableAPIError).field;
    }
    expect(field).toBe('remote_port');
  });

  it('keeps the last list and shows the error when a reload fails', async () => {
    const model = new ForwardsModel();
    request.mockResolvedValueOnce({ forwards: [forward('a', 6006, 40001)] });
    await model.refresh();
    request.mockRejectedValueOnce(new Error('server gone'));
    await model.refresh();
    expect(model.error).toBe('server gone');
    expect(model.forwards).toHaveLength(1);
  });

  it('reloads even when an action fails, and rethrows the server’s error', async () => {
    const model = new ForwardsModel();
    post.mockRejectedValueOnce(
      new RanktableAPIError('no such profile', 404, 'not-found', 'profile')
    );
    request.mockResolvedValueOnce({ forwards: [] });
    await expect(model.open('gone', '6006')).rejects.toThrow('no such profile');
    expect(request).toHaveBeenCalledWith('forwards');
    expect(model.busy).toBe('');
  });
});
