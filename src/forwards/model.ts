import { PageConfig } from '@jupyterlab/coreutils';

import { RanktableAPIError, del, get, post } from '../api/client';
import type { components, paths } from '../api/openapi';
import { ListModel } from '../ui/model';

/**
 * A port forward (`components/schemas/Forward` in openapi.yaml): a Unix socket only its owner reaches, served
 * at the server's authenticated `proxy_path` (bind `unix`), or a 127.0.0.1 listener (bind `127.0.0.1`).
 */
export type IForward = components['schemas']['Forward'];

/**
 * Where the panel opens a forward: this server's authenticated proxy path (under its base URL) for its own
 * Unix-socket forwards, the 127.0.0.1 URL for a TCP one, `null` for another process's Unix-socket forward.
 */
export function forwardHref(f: IForward): string | null {
  if (f.proxy_path) {
    return PageConfig.getBaseUrl().replace(/\/+$/, '') + f.proxy_path;
  }
  return /^https?:\/\//.test(f.url) ? f.url : null;
}

/** POST /ranktable/forwards's body. */
export type IForwardRequest =
  paths['/ranktable/forwards']['post']['requestBody']['content']['application/json'];

/** A TCP port as the server accepts it (1-65535), or a field error naming the limit. */
export function parsePort(text: string, field: string): number {
  const value = Number(text.trim());
  if (!text.trim() || !Number.isInteger(value) || value < 1 || value > 65535) {
    throw new RanktableAPIError(
      `${field}: a port is a whole number from 1 to 65535`,
      400,
      'invalid',
      field
    );
  }
  return value;
}

/** Port forwards: GET/POST /ranktable/forwards, DELETE /ranktable/forwards/{id}. */
export class ForwardsModel extends ListModel<IForward> {
  get forwards(): IForward[] {
    return this.items;
  }

  protected async fetch(): Promise<IForward[]> {
    return (await get('/ranktable/forwards')).forwards;
  }

  /**
   * Forward `remotePort` of the profile's instance to a Unix socket served at the authenticated proxy path
   * (or, with `localPort`, to that 127.0.0.1 port: every local user can connect to it).
   */
  open(profile: string, remotePort: string, localPort = ''): Promise<IForward> {
    if (!profile) {
      throw new RanktableAPIError(
        'profile: choose the SSH profile of the instance',
        400,
        'invalid',
        'profile'
      );
    }
    const body: IForwardRequest = {
      profile,
      remote_port: parsePort(remotePort, 'remote_port')
    };
    if (localPort.trim()) {
      body.local_port = parsePort(localPort, 'local_port');
    }
    return this.act('open', () => post('/ranktable/forwards', {}, body));
  }

  close(id: string): Promise<IForward> {
    return this.act(id, () =>
      del('/ranktable/forwards/{forward}', { path: { forward: id } })
    );
  }
}
