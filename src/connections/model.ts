import { ISignal, Signal } from '@lumino/signaling';
import { IDisposable } from '@lumino/disposable';

import { StreamClient, del, get, patch, post } from '../api/client';
import type { components, paths } from '../api/openapi';
import { ITestRequest, ITestResult } from './hostkey';

/** Where templates and saved versions persist (the plugin passes JupyterLab's state database). */
export interface IKeyValueStore {
  load<T>(key: string): Promise<T | undefined>;
  save(key: string, value: unknown): Promise<void>;
}

export class MemoryStore implements IKeyValueStore {
  private _data = new Map<string, unknown>();
  async load<T>(key: string): Promise<T | undefined> {
    return this._data.get(key) as T | undefined;
  }
  async save(key: string, value: unknown): Promise<void> {
    this._data.set(key, value);
  }
}

/** An SSH profile as `GET /ranktable/profiles` lists it (generated from openapi.yaml). */
export type IProfile = components['schemas']['Profile'];

/** POST /ranktable/profiles's body. */
export type INewProfile = NonNullable<
  paths['/ranktable/profiles']['post']['requestBody']
>['content']['application/json'];

/** When a profile's saves are uploaded (`Profile.sync.upload`). */
export type SyncMode = NonNullable<NonNullable<IProfile['sync']>['upload']>;

/** GET /ranktable/config (`components/schemas/Config`). */
export type IServerConfig = components['schemas']['Config'];

export type SectionId =
  'connections' | 'sync' | 'jobs' | 'kernels' | 'forwards';

/** State the sidebar's Connections, Sync and Remote kernels sections share: profiles and server config. */
export class RanktableModel implements IDisposable {
  profiles: IProfile[] = [];
  profileStatus: Record<string, string> = {};
  profileMessages: Record<string, string> = {};
  config: IServerConfig | null = null;
  store: IKeyValueStore = new MemoryStore();
  private _changed = new Signal<this, void>(this);
  private _disposed = false;

  constructor(readonly stream: StreamClient = new StreamClient()) {}

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  emit(): void {
    this._changed.emit();
  }

  async loadConfig(): Promise<void> {
    this.config = await get('/ranktable/config');
    this.emit();
  }

  async refreshProfiles(): Promise<void> {
    const data = await get('/ranktable/profiles');
    this.profiles = data.profiles;
    this.emit();
  }

  /** A profile's connection state in the Connections section (`testing`, `ok`, `changed`…) and its message. */
  setStatus(name: string, status: string, message = ''): void {
    this.profileStatus = { ...this.profileStatus, [name]: status };
    this.profileMessages = { ...this.profileMessages, [name]: message };
    this.emit();
  }

  /** Connect to the profile's host (accepting a host key or unlocking the key when the body says so). */
  testProfile(name: string, body: ITestRequest): Promise<ITestResult> {
    return post('/ranktable/profiles/{name}/test', { path: { name } }, body);
  }

  async addProfile(profile: INewProfile): Promise<void> {
    await post('/ranktable/profiles', {}, profile);
    await this.refreshProfiles();
  }

  /** The profile's automatic upload mode, and the folder it uploads from. */
  async setSyncMode(
    name: string,
    mode: string,
    localDir: string
  ): Promise<void> {
    await patch(
      '/ranktable/profiles/{name}',
      { path: { name } },
      { sync: { upload: mode as SyncMode }, local_dir: localDir }
    );
    await this.refreshProfiles();
  }

  async removeProfile(name: string): Promise<void> {
    await del('/ranktable/profiles/{name}', { path: { name } });
    await this.refreshProfiles();
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this.stream.dispose();
    Signal.clearData(this);
  }
}
