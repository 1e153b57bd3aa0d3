import { del, get, post } from '../api/client';
import type { components, paths } from '../api/openapi';
import { ListModel } from '../ui/model';

type Schemas = components['schemas'];

/** One row of GET /ranktable/remote-kernels (`components/schemas/RemoteKernel`). */
export type IRemoteKernel = Schemas['RemoteKernel'];

/** POST /ranktable/remote-kernels/{id}/attach's answer. */
export type IKernelAttached = Schemas['KernelAttached'];

/** DELETE /ranktable/remote-kernels/{id}'s answer. */
export type IKernelShutDown = Schemas['KernelShutDown'];

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
