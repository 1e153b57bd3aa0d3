import { RanktableAPIError, del, get, post } from '../api/client';
import type { components, paths } from '../api/openapi';
import { Model } from '../ui/model';

type Schemas = components['schemas'];

/** A port forward (`components/schemas/Forward` in openapi.yaml): a 127.0.0.1 listener to a port on an instance. */
export type IForward = Schemas['Forward'];

/** POST /ranktable/forwards's body. */
export type IForwardRequest =
  paths['/ranktable/forwards']['post']['requestBody']['content']['application/json'];

/** One row of GET /ranktable/remote-kernels (`components/schemas/RemoteKernel`). */
export type IRemoteKernel = Schemas['RemoteKernel'];

/** POST /ranktable/remote-kernels/{id}/attach's answer. */
export type IKernelAttached = Schemas['KernelAttached'];

/** DELETE /ranktable/remote-kernels/{id}'s answer. */
export type IKernelShutDown = Schemas['KernelShutDown'];

/** Shared by the small remote models: a list fetched from one endpoint, a changed signal, the last error. */
abstract class ListModel<T> extends Model {
  items: T[] = [];
  error = '';
  /** The action in flight (a forward or kernel id, or "open"), for disabling its buttons. */
  busy = '';

  protected abstract fetch(): Promise<T[]>;

  /** Reload the list; an error is kept in `error` (the last good list stays). */
  async refresh(): Promise<void> {
    try {
      this.items = await this.fetch();
      this.error = '';
    } catch (e) {
      this.error = e instanceof Error ? e.message : String(e);
    }
    this.emit();
  }

  /** Run one server action marked busy under `key`, then reload; errors are rethrown to the view. */
  protected async act<R>(key: string, action: () => Promise<R>): Promise<R> {
    this.busy = key;
    this.emit();
    try {
      return await action();
    } finally {
      this.busy = '';
      await this.refresh();
    }
  }
}

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

/** Remote (SSH) kernels that outlive the Jupyter server: list, attach, shut down. */
export class RemoteKernelsModel extends ListModel<IRemoteKernel> {
  get kernels(): IRemoteKernel[] {
    return this.items;
  }

  protected async fetch(): Promise<IRemoteKernel[]> {
    return (await get('/ranktable/remote-kernels')).kernels;
  }

  attach(id: string): Promise<IKernelAttached> {
    return this.act(id, () =>
      post(
        '/ranktable/remote-kernels/{kernel_id}/attach',
        { path: { kernel_id: id } },
        {}
      )
    );
  }

  shutdown(id: string): Promise<IKernelShutDown> {
    return this.act(id, () =>
      del('/ranktable/remote-kernels/{kernel_id}', {
        path: { kernel_id: id }
      })
    );
  }
}

/** POST /ranktable/kernels/{profile}'s answer: the kernel spec to open a notebook with. */
export type IKernelStarted =
  paths['/ranktable/kernels/{profile}']['post']['responses'][201]['content']['application/json'];

/** Register a kernel spec that starts `python` on the profile's instance (a notebook opens on it). */
export function addRemoteKernelSpec(
  profile: string,
  python: string
): Promise<IKernelStarted> {
  return post(
    '/ranktable/kernels/{profile}',
    { path: { profile } },
    { python }
  );
}
