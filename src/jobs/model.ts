import { ISignal, Signal } from '@lumino/signaling';

import { StreamClient, del, get, post, subscribe } from '../api/client';
import { messageOf } from '../api/errors';
import type { components, paths } from '../api/openapi';
import { Model } from '../ui/model';
import { PermissionsModel } from '../permissions/model';
import { TeamModel } from '../team/model';

/** One job as the `jobs` channel and `GET /ranktable/jobs` describe it (generated from openapi.yaml). */
export type IJobRow = components['schemas']['JobSummary'];
export type IStopped =
  paths['/ranktable/jobs/{namespace}/{name}']['delete']['responses']['200']['content']['application/json'];

export type IResumed =
  paths['/ranktable/jobs/{namespace}/{name}/resume']['post']['responses']['201']['content']['application/json'];

/** Pod health over a job's pods (the server's `observe.health.job_health`). */
export type IJobHealth = NonNullable<IJobRow['health']>;

/** A run: one submission of a job, identified by its uid (a same-name resubmit is a new run). */
export interface IRunRef {
  namespace: string;
  name: string;
  uid: string;
}

/** Why the job list cannot be trusted right now, and when it is tried again. */
export interface IBanner {
  message: string;
  reason: string;
  retryAt: number;
}

export function jobKey(job: { namespace: string; name: string }): string {
  return `${job.namespace}/${job.name}`;
}

/** Whether a row needs attention: restarts, a bad last state (CrashLoopBackOff, OOMKilled) or a failed exit. */
export function healthIssue(job: IJobRow): string {
  const h = job.health;
  const parts: string[] = [];
  if (h && h.reasons) {
    parts.push(...h.reasons);
    if (
      h.exit_code !== null &&
      h.exit_code !== undefined &&
      h.exit_code !== 0
    ) {
      parts.push(`exit code ${h.exit_code}`);
    }
    if (h.restarts) {
      parts.push(`${h.restarts} restart${h.restarts === 1 ? '' : 's'}`);
    }
  }
  return Array.from(new Set(parts)).join(', ');
}

/** Why the run is failing (CrashLoopBackOff, OOMKilled, exit code N), or '' (the server's `health.failing`). */
export function failing(job: IJobRow): string {
  return job.health?.failing ?? '';
}

/** Phases of a run that ended (a stopped run's record says Stopped). */
export const ENDED_PHASES = [
  'Completed',
  'Failed',
  'Aborted',
  'Terminated',
  'Stopped'
];

/** Whether a job of this name is running now, so a resubmit would stop it first. */
export function isLive(job: IJobRow | undefined): job is IJobRow {
  return !!job && !ENDED_PHASES.includes(job.phase);
}

/** Pods ready of the pods the job asks for (`2/4`), from pod health when the server sent it. */
export function podsReady(job: IJobRow): string {
  const h: IJobHealth | undefined = job.health;
  const ready = h?.ready ?? job.running ?? 0;
  return `${ready}/${job.nodes ?? h?.total ?? 0}`;
}

/** Age in seconds from the creation timestamp (ticks client-side, so it is never frozen). */
export function ageSeconds(job: IJobRow, now = Date.now()): number | null {
  if (job.created) {
    const t = Date.parse(job.created);
    if (!Number.isNaN(t)) {
      return Math.max(0, (now - t) / 1000);
    }
  }
  return job.age_seconds ?? null;
}

const RETRY_MIN_MS = 1000;
const RETRY_MAX_MS = 5000;
/** How often the list is read over REST while the websocket cannot be opened. */
export const POLL_MS = 5000;

/**
 * The live job list: one `jobs` subscription for the whole UI, renewed with a short back-off when the
 * pool or the API is lost (the banner says why and when it retries, and clears on the next data).
 */
export class JobsModel extends Model {
  jobs: IJobRow[] = [];
  banner: IBanner | null = null;
  /** Phases seen per run (uid), with when: the Job view's timeline. */
  readonly history = new Map<string, { phase: string; at: number }[]>();
  /** Every run seen this session by uid, with its last phase (earlier runs stay openable). */
  readonly seen = new Map<
    string,
    IRunRef & { phase: string; created: string | null }
  >();
  private _phaseChanged = new Signal<this, { job: IJobRow; previous: string }>(
    this
  );
  private _failing = new Signal<this, IJobRow>(this);
  /** Runs (uid) already announced as failing: once per run, however often its row changes. */
  private _failingSeen = new Set<string>();
  private _delay = RETRY_MIN_MS;
  private _first = true;
  /** What the user may do (read once; the views disable the rest, with the reason). */
  readonly permissions = new PermissionsModel();
  /** The team's jobs on a shared pool (read only while its view is unfolded). */
  readonly team = new TeamModel();
  /** True while the websocket cannot be opened and the list is polled instead. */
  polling = false;
  /**
   * True from losing an open websocket (the Jupyter server killed, restarting, unreachable) until the
   * renewed watch gets data: the list is the last known state, not live.
   */
  disconnected = false;

  constructor(readonly stream: StreamClient) {
    super();
    stream.stateChanged.connect(this._onStream, this);
    this.permissions.changed.connect(() => {
      if (this.permissions.noRead) {
        this.release('watch');
        this.cancel('retry');
        this.cancel('poll');
        this.polling = false;
        this.banner = null;
      }
      this.emit();
    }, this);
  }

  dispose(): void {
    this.permissions.dispose();
    this.team.dispose();
    super.dispose();
  }

  private _onStream(_: StreamClient, state: string): void {
    if (state === 'blocked' && !this.permissions.noRead) {
      // REST may still work (a proxy that refuses websocket upgrades): list the jobs that way
      if (!this.polling) {
        this.polling = true;
        void this.refresh();
        this.every('poll', () => void this.refresh(), POLL_MS);
      }
    } else if (state === 'lost') {
      this.disconnected = true;
      this.emit();
    } else if (state === 'open') {
      // the watch clears it on its first data (the list is stale until then); without one, now
      this.disconnected = this.disconnected && this.holds('watch');
      this.polling = false;
      this.cancel('poll');
      this.emit();
    }
  }

  /** Try the lost websocket again now rather than at the end of its back-off. */
  reconnect(): void {
    this.stream.reconnect();
  }

  /** A job moved to another phase (not emitted for the first snapshot). */
  get phaseChanged(): ISignal<this, { job: IJobRow; previous: string }> {
    return this._phaseChanged;
  }

  /** A run started failing (CrashLoopBackOff, OOMKilled, a failed exit): once per run. */
  get failingChanged(): ISignal<this, IJobRow> {
    return this._failing;
  }

  /** The current run of a job name, if it still exists. */
  find(namespace: string, name: string): IJobRow | undefined {
    return this.jobs.find(j => j.namespace === namespace && j.name === name);
  }

  findRun(uid: string): IJobRow | undefined {
    return this.jobs.find(j => j.uid === uid);
  }

  /** Refetch now (also while the watch is live: the listing replaces the rows, newer events follow). */
  async refresh(): Promise<void> {
    try {
      const data = await get('/ranktable/jobs');
      this._apply(data.jobs);
      this.banner = null;
    } catch (error) {
      this._fail(error);
    }
    this.emit();
  }

  watch(): void {
    void this.permissions.load();
    if (this.holds('watch') || this.isDisposed || this.permissions.noRead) {
      return;
    }
    const sub = subscribe(
      this.stream,
      'jobs',
      {},
      {
        onData: data => {
          if (data.event === 'snapshot' && data.jobs) {
            this._apply(data.jobs);
          } else if (data.event === 'upsert' && data.job) {
            const job = data.job;
            const rest = this.jobs.filter(j => jobKey(j) !== jobKey(job));
            this._apply([...rest, job]);
          } else if (data.event === 'delete' && data.job) {
            const gone = jobKey(data.job);
            this._apply(this.jobs.filter(j => jobKey(j) !== gone));
          }
          this.banner = null;
          this.disconnected = false;
          this._delay = RETRY_MIN_MS;
          this.emit();
        },
        onError: error => {
          this.disconnected = false;
          this.forget('watch');
          this._fail(error);
          this.emit();
          this._retry();
        },
        onEnd: () => {
          this.forget('watch');
          this._retry();
        },
        onReconnect: () => {
          this.disconnected = true; // until the new snapshot replaces the rows
          this.emit();
        }
      }
    );
    this.hold('watch', sub);
  }

  /** Archive the run's logs (server side, bounded), then delete the job; says what was kept. */
  async stop(job: { namespace: string; name: string }): Promise<IStopped> {
    const result = await del('/ranktable/jobs/{namespace}/{name}', {
      path: job
    });
    await this.refresh();
    return result;
  }

  /** Submit `run`'s spec again (a job of its name still on the pool is stopped first); the new run. */
  async resubmit(run: IRunRef): Promise<IRunRef> {
    const next = await post(
      '/ranktable/jobs/{namespace}/{name}/resubmit',
      {
        path: { namespace: run.namespace, name: run.name },
        query: { run: run.uid || undefined }
      },
      {}
    );
    await this.refresh();
    return next;
  }

  /** The next run of `run`'s lineage from its last checkpoint, the node a fault was blamed on avoided. */
  async resume(run: IRunRef, fromScratch = false): Promise<IResumed> {
    const next = await post(
      '/ranktable/jobs/{namespace}/{name}/resume',
      {
        path: { namespace: run.namespace, name: run.name },
        query: { from_scratch: fromScratch ? 'true' : 'false' }
      },
      {}
    );
    await this.refresh();
    return next;
  }

  async submit(spec: Record<string, unknown>): Promise<IRunRef> {
    const run = await post('/ranktable/jobs', {}, { spec });
    await this.refresh();
    return run;
  }

  private _apply(rows: IJobRow[]): void {
    const before = new Map(this.jobs.map(j => [jobKey(j), j]));
    const now = Date.now();
    for (const job of rows) {
      if (job.uid) {
        this.seen.set(job.uid, {
          namespace: job.namespace,
          name: job.name,
          uid: job.uid,
          phase: job.phase,
          created: job.created ?? null
        });
        const seen = this.history.get(job.uid) ?? [];
        if (!seen.length || seen[seen.length - 1].phase !== job.phase) {
          seen.push({ phase: job.phase, at: now });
          this.history.set(job.uid, seen);
        }
      }
      if (job.uid && failing(job) && !this._failingSeen.has(job.uid)) {
        this._failingSeen.add(job.uid);
        this._failing.emit(job);
      }
      const prev = before.get(jobKey(job));
      if (!this._first && prev && prev.phase !== job.phase) {
        this._phaseChanged.emit({ job, previous: prev.phase });
      }
    }
    this._first = false;
    this.jobs = [...rows].sort((a, b) => a.name.localeCompare(b.name));
  }

  private _fail(error: unknown): void {
    const e = error as { message?: string; reason?: string };
    this.banner = {
      // a stream error is a plain {message, reason}; a request's is an Error (no answer: "cannot reach")
      message:
        error instanceof Error ? messageOf(error) : e?.message || String(error),
      reason: e?.reason || 'unavailable',
      retryAt: Date.now() + this._delay
    };
  }

  private _retry(): void {
    if (this.isDisposed || this.pending('retry') || this.permissions.noRead) {
      return;
    }
    if (this.banner) {
      this.banner = { ...this.banner, retryAt: Date.now() + this._delay };
    }
    this.later('retry', () => this.watch(), this._delay);
    this._delay = Math.min(this._delay * 2, RETRY_MAX_MS);
  }
}
