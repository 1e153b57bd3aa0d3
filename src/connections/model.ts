import { ISignal, Signal } from '@lumino/signaling';
import { IDisposable } from '@lumino/disposable';

import { components } from '../api/openapi';
import { requestAPI } from '../api/request';
import { StreamClient } from '../api/stream';

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
export type IProfile = Omit<components['schemas']['Profile'], 'sync'> & {
  sync?: { upload?: string; delete_remote?: boolean };
};

export interface IServerConfig {
  namespace: string;
  context: string;
  kubeconfig: string;
  flavours: Record<string, Record<string, unknown>>;
  frameworks: string[];
  sync_mode: string;
}

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
    this.config = await requestAPI<IServerConfig>('config');
    this.emit();
  }

  async refreshProfiles(): Promise<void> {
    const data = await requestAPI<{ profiles: IProfile[] }>('profiles');
    this.profiles = data.profiles;
    this.emit();
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
