import { RanktableAPIError, del, get, post } from '../api/client';
import type { components, paths } from '../api/openapi';
import { ListModel } from '../ui/model';

/** A port forward (`components/schemas/Forward` in openapi.yaml): a 127.0.0.1 listener to a port on an instance. */
export type IForward = components['schemas']['Forward'];

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

  /** Forward `remotePort` of the profile's instance to a free 127.0.0.1 port (or `localPort`). */
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
