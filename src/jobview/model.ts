import { get, getChanged } from '../api/client';
import { RanktableAPIError } from '../api/errors';
import type { components } from '../api/openapi';
import { ILayoutResult } from '../layout/figure';
import { Model } from '../ui/model';
import { ENDED_PHASES, IJobRow, IRunRef, failing } from '../jobs/model';

/** `GET /ranktable/jobs/{namespace}/{name}` (generated from openapi.yaml). */
export type IDescription = components['schemas']['Describe'];
export type IPodRow = IDescription['pods'][number];
export type IEventRow = IDescription['events'][number];

/** An archived run's record (`GET .../runs`): its final phase once it ended. */
export type IRunRecord = components['schemas']['Run'];

export const DESCRIBE_EVERY_MS = 2000;
/** How soon the Layout tab asks again while the run's rank table is still being filled in (a 409). */
export const LAYOUT_RETRY_MS = 2000;

/** What the Job view's header says of a run. */
export interface IRunHeader {
  phase: string;
  /** The phase as shown: "Failing" for a running run whose pods crash, fail or restart. */
  label: string;
  /** Ended (finished, failed, stopped or replaced): nothing to stop, no "pods ready". */
  ended: boolean;
  /** Why it is failing (the server's `health.failing`), or ''. */
  failingWhy: string;
}

/**
 * The header of a run's view: the job list's row while it is the current run; once it ended (another run
 * took the name, or the job is gone) its record's final phase (Stopped, Completed...), not the last one
 * its description saw. A crash loop's pods are Running and ready between restarts: the header says Failing
 * with why, as the sidebar's row does, never "pods ready".
 */
export function runHeader(
  row: IJobRow | undefined,
  endedWhy: string,
  recordPhase: string | null | undefined,
  describedPhase: string | undefined
): IRunHeader {
  const phase =
    row?.phase ??
    (endedWhy ? (recordPhase ?? 'ended') : (describedPhase ?? '…'));
  const ended = !!endedWhy || ENDED_PHASES.includes(phase);
  const failingWhy = row && !ended ? failing(row) : '';
  const label = failingWhy && phase === 'Running' ? 'Failing' : phase;
  return { phase, label, ended, failingWhy };
}

/**
 * What one run's Job view shows besides logs: its description (pods, events), polled while the view is
 * open and the run is current; once another run took the name (or the job is gone) it keeps the last one.
 */
export class RunModel extends Model {
  description: IDescription | null = null;
  layout: ILayoutResult | null = null;
  error = '';
  layoutError = '';
  /** Set once the cluster's job of this name is no longer this run. */
  ended = '';
  /** The ended run's record (final phase, when it ended), read once it ended. */
  record: IRunRecord | null = null;
  /** The description's version (ETag): the server answers 304 while it still holds. */
  private _etag = '';

  constructor(readonly run: IRunRef) {
    super();
  }

  start(): void {
    if (this.pending('describe') || this.isDisposed) {
      return;
    }
    void this.refresh();
    this.every(
      'describe',
      () => {
        if (!this.ended) {
          void this.refresh();
        }
      },
      DESCRIBE_EVERY_MS
    );
  }

  async refresh(): Promise<void> {
    try {
      const got = await getChanged(
        '/ranktable/jobs/{namespace}/{name}',
        { path: this.run },
        this.description ? this._etag : ''
      );
      if (!got) {
        if (this.error) {
          this.error = ''; // unchanged, and reachable again
          this.emit();
        }
        return; // unchanged: nothing to parse or render
      }
      const d = got.data;
      this._etag = got.etag;
      if (d.job.uid && this.run.uid && d.job.uid !== this.run.uid) {
        this.ended = 'a newer run of this job replaced it';
        await this._loadRecord();
      } else {
        this.description = d;
        this.error = '';
      }
    } catch (e) {
      const err = e as { status?: number; message?: string };
      if (err.status === 404) {
        this.ended = 'the job was stopped or deleted';
        await this._loadRecord();
      } else {
        this.error = err.message ?? String(e);
      }
    }
    this.emit();
  }

  /** The run's record from the archive (written by the stop): its final phase. */
  private async _loadRecord(): Promise<void> {
    try {
      const { runs } = await get('/ranktable/jobs/{namespace}/{name}/runs', {
        path: this.run
      });
      this.record = runs.find(r => r.uid === this.run.uid) ?? null;
    } catch {
      this.record = null; // the view still says "ended"
    }
  }

  /**
   * Plan the run's layout. While its rank table is still initializing (the tab opened at submit time) the
   * server answers 409: the model asks again every `LAYOUT_RETRY_MS` until the table is complete, the run
   * ended or the view closed, so the tab never stays on "still initializing".
   */
  async loadLayout(topologyPath = ''): Promise<void> {
    this.cancel('layout');
    try {
      this.layout = await get('/ranktable/jobs/{namespace}/{name}/layout', {
        path: this.run,
        query: { topology_path: topologyPath }
      });
      this.layoutError = '';
    } catch (e) {
      this.layoutError = (e as Error).message ?? String(e);
      if (e instanceof RanktableAPIError && e.status === 409 && !this.ended) {
        this.layoutError += ' (planned as soon as it is complete)';
        this.later(
          'layout',
          () => void this.loadLayout(topologyPath),
          LAYOUT_RETRY_MS
        );
      }
    }
    this.emit();
  }
}
