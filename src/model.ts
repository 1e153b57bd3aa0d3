import { ISignal, Signal } from '@lumino/signaling';
import { IDisposable } from '@lumino/disposable';

import { requestAPI } from './request';
import { StreamClient } from './stream';
import { IFormState } from './specform';

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

export interface IJobRef {
  namespace: string;
  name: string;
}

export interface IJobSummary extends IJobRef {
  phase: string;
  [key: string]: unknown;
}

export interface IProfile {
  name: string;
  host: string;
  port?: number | null;
  user?: string | null;
  key_file?: string | null;
  jump?: string | null;
  remote_dir?: string;
  sync?: { upload?: string; delete_remote?: boolean };
  [key: string]: unknown;
}

export interface IServerConfig {
  namespace: string;
  context: string;
  kubeconfig: string;
  flavours: Record<string, Record<string, unknown>>;
  frameworks: string[];
  sync_mode: string;
}

export type SectionId =
  'connections' | 'sync' | 'compose' | 'layout' | 'jobs' | 'logs' | 'kernels';

/**
 * State shared by the panel's sections and the plugin's commands: the live job list (one watch for
 * the whole UI), profiles, and what the Layout and Logs sections are showing.
 */
export class RanktableModel implements IDisposable {
  readonly stream: StreamClient;
  jobs: IJobSummary[] = [];
  jobsError = '';
  profiles: IProfile[] = [];
  profileStatus: Record<string, string> = {};
  profileMessages: Record<string, string> = {};
  config: IServerConfig | null = null;
  layoutJob: IJobRef | null = null;
  /** A composed (not yet submitted) spec whose planned layout the Layout section shows. */
  layoutSpec: Record<string, unknown> | null = null;
  /** The Compose form as last edited (kept while the panel re-renders). */
  draft: IFormState | null = null;
  store: IKeyValueStore = new MemoryStore();
  logsJob: IJobRef | null = null;
  open: Record<SectionId, boolean> = {
    connections: true,
    sync: false,
    compose: true,
    layout: false,
    jobs: true,
    logs: false,
    kernels: false
  };
  private _changed = new Signal<this, void>(this);
  private _phaseChanged = new Signal<
    this,
    { job: IJobSummary; previous: string }
  >(this);
  private _requested = new Signal<this, SectionId>(this);
  private _watch: IDisposable | null = null;
  private _rewatchTimer: ReturnType<typeof setTimeout> | null = null;
  private _rewatchDelay = 1000;
  private _watchLive = false;
  private _disposed = false;

  constructor(stream?: StreamClient) {
    this.stream = stream ?? new StreamClient();
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** A job moved to another phase (not emitted for the first snapshot). */
  get phaseChanged(): ISignal<this, { job: IJobSummary; previous: string }> {
    return this._phaseChanged;
  }

  /** A command asked for a section to be shown (the panel scrolls to it). */
  get requested(): ISignal<this, SectionId> {
    return this._requested;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  emit(): void {
    this._changed.emit();
  }

  show(section: SectionId): void {
    this.open[section] = true;
    this._changed.emit();
    this._requested.emit(section);
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

  /**
   * One-off listing, only while no watch is live: a listing answered after a newer watch event would
   * otherwise overwrite it with an older state (e.g. a job shown Pending although it runs).
   */
  async refreshJobs(): Promise<void> {
    if (this._watchLive) {
      return;
    }
    const data = await requestAPI<{ jobs: IJobSummary[] }>('jobs');
    if (this._watchLive) {
      return;
    }
    this.jobs = data.jobs;
    this.jobsError = '';
    this.emit();
  }

  /** Keep `jobs` live through the stream's `jobs` channel; phase changes are signalled. */
  watchJobs(): void {
    if (this._watch) {
      return;
    }
    let first = true;
    this._watch = this.stream.subscribe(
      'jobs',
      {},
      {
        onData: (data: {
          event: string;
          jobs?: IJobSummary[];
          job?: IJobSummary;
        }) => {
          this._watchLive = true;
          if (data.event === 'snapshot' && data.jobs) {
            const before = new Map(this.jobs.map(j => [key(j), j.phase]));
            this.jobs = data.jobs;
            if (!first) {
              for (const job of data.jobs) {
                const prev = before.get(key(job));
                if (prev && prev !== job.phase) {
                  this._phaseChanged.emit({ job, previous: prev });
                }
              }
            }
            first = false;
          } else if (data.event === 'upsert' && data.job) {
            const job = data.job;
            const i = this.jobs.findIndex(j => key(j) === key(job));
            const prev = i >= 0 ? this.jobs[i].phase : '';
            this.jobs =
              i >= 0
                ? [...this.jobs.slice(0, i), job, ...this.jobs.slice(i + 1)]
                : [...this.jobs, job];
            if (prev !== job.phase) {
              this._phaseChanged.emit({ job, previous: prev });
            }
          } else if (data.event === 'delete' && data.job) {
            const gone = key(data.job);
            this.jobs = this.jobs.filter(j => key(j) !== gone);
          }
          this.jobsError = '';
          this._rewatchDelay = 1000;
          this.emit();
        },
        onError: error => {
          this.jobsError = error.message;
          this._watch = null;
          this._watchLive = false;
          this.emit();
          this._rewatch();
        },
        onEnd: () => {
          this._watch = null;
          this._watchLive = false;
          this._rewatch();
        }
      }
    );
  }

  /** A watch that ended or failed (cluster unreachable, server restarted) is renewed with back-off. */
  private _rewatch(): void {
    if (this._disposed || this._rewatchTimer) {
      return;
    }
    this._rewatchTimer = setTimeout(() => {
      this._rewatchTimer = null;
      this.watchJobs();
    }, this._rewatchDelay);
    this._rewatchDelay = Math.min(this._rewatchDelay * 2, 30_000);
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    if (this._rewatchTimer) {
      clearTimeout(this._rewatchTimer);
    }
    this._disposed = true;
    this._watch?.dispose();
    this.stream.dispose();
    Signal.clearData(this);
  }
}

export function key(job: IJobRef): string {
  return `${job.namespace}/${job.name}`;
}
