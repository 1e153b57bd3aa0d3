import { IStateDB } from '@jupyterlab/statedb';
import { ReadonlyPartialJSONValue } from '@lumino/coreutils';

import { IKeyValueStore } from '../connections/model';

/** Profiles' UI state persists in JupyterLab's state database (per user, server-side). */
export class StateStore implements IKeyValueStore {
  constructor(
    private _db: IStateDB,
    private _prefix: string
  ) {}
  async load<T>(key: string): Promise<T | undefined> {
    const value = await this._db.fetch(`${this._prefix}:${key}`);
    return (value ?? undefined) as T | undefined;
  }
  async save(key: string, value: unknown): Promise<void> {
    await this._db.save(
      `${this._prefix}:${key}`,
      value as ReadonlyPartialJSONValue
    );
  }
}
