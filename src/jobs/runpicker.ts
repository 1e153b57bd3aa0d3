import { get } from '../api/client';
import type { components } from '../api/openapi';
import { Model } from '../ui/model';
import { IJobRow, IRunRef, ageSeconds, jobKey } from './model';

/** An archived run of a job (`components/schemas/Run`, from `GET /ranktable/jobs/{ns}/{name}/runs`). */
export type IArchivedRun = components['schemas']['Run'];

/** One run the picker offers: the job's current run or an earlier one (archived, or seen this session). */
export interface IRunChoice extends IRunRef {
  phase: string;
  /** Seconds since the run was submitted (null: unknown). */
  age: number | null;
  /** The job of this name on the pool is this run (false: an earlier run of the name). */
  current: boolean;
}

/** A job name with its runs, newest first (the current run, if any, is first). */
export interface IJobChoice {
  namespace: string;
  name: string;
  runs: IRunChoice[];
}

/** A run the UI saw earlier in this session (e.g. before a same-name resubmit replaced it). */
export interface ISeenRun extends IRunRef {
  phase: string;
  created: string | null;
}

export type PickerState = 'loading' | 'ready' | 'empty' | 'unreachable';

/**
 * What the launcher's "open a Job view" dialog lists: the pool's jobs (read fresh, so an unreachable
 * pool is told as such) with each job's earlier runs from the server's run archive and from the runs
 * this session saw. The dialog only renders it and reads `selected`.
 */
export class RunPickerModel extends Model {
  state: PickerState = 'loading';
  error = '';
  choices: IJobChoice[] = [];
  selected: IRunRef | null = null;

  constructor(private _seen: () => Iterable<ISeenRun> = () => []) {
    super();
  }

  async load(namespace?: string, now = Date.now()): Promise<void> {
    this.state = 'loading';
    this.emit();
    let rows: IJobRow[];
    try {
      rows = (await get('/ranktable/jobs', { query: { namespace } })).jobs;
    } catch (e) {
      const err = e as { message?: string };
      this.choices = [];
      this.selected = null;
      this.error = err?.message || String(e);
      this.state = 'unreachable';
      this.emit();
      return;
    }
    const groups = new ChoiceGroups();
    for (const row of rows) {
      if (row.uid) {
        groups.add(row.namespace, row.name, {
          uid: row.uid,
          phase: row.phase,
          age: ageSeconds(row, now),
          current: true
        });
      }
    }
    // earlier runs of the names on the pool: the archive outlives stop, delete and resubmit
    for (const runs of await archivedRuns(groups.all())) {
      for (const r of runs) {
        groups.add(r.namespace, r.job, {
          uid: r.uid,
          phase: r.phase ?? 'ended',
          age: Math.max(0, now / 1000 - r.created),
          current: false
        });
      }
    }
    for (const s of this._seen()) {
      if (!namespace || s.namespace === namespace) {
        const t = s.created ? Date.parse(s.created) : NaN;
        groups.add(s.namespace, s.name, {
          uid: s.uid,
          phase: s.phase,
          age: Number.isNaN(t) ? null : Math.max(0, (now - t) / 1000),
          current: false
        });
      }
    }
    this._show(groups.sorted());
  }

  /** The choices found: the selection kept while its run is still offered, else the first run. */
  private _show(choices: IJobChoice[]): void {
    this.choices = choices;
    this.error = '';
    this.state = this.choices.length ? 'ready' : 'empty';
    const still =
      this.selected &&
      this.choices.some(g => g.runs.some(r => r.uid === this.selected!.uid));
    if (!still) {
      this.selected = this.choices.length ? ref(this.choices[0].runs[0]) : null;
    }
    this.emit();
  }

  select(run: IRunRef | null): void {
    this.selected = run ? ref(run) : null;
    this.emit();
  }
}

function ref(run: IRunRef): IRunRef {
  return { namespace: run.namespace, name: run.name, uid: run.uid };
}

/** A compact "submitted … ago" age: `42 s`, `7 min`, `3 h 5 min`, `2 d 4 h` (`–` when unknown). */
export function shortAge(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) {
    return '–';
  }
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) {
    return `${s} s`;
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)} min`;
  }
  if (s < 86400) {
    const m = Math.floor((s % 3600) / 60);
    return `${Math.floor(s / 3600)} h${m ? ` ${m} min` : ''}`;
  }
  const h = Math.floor((s % 86400) / 3600);
  return `${Math.floor(s / 86400)} d${h ? ` ${h} h` : ''}`;
}

/** The short form of a run's uid shown beside its name (the Job view's tab says the same). */
export function shortUid(uid: string): string {
  return uid.slice(0, 8);
}

/** The archived runs of each job name (none when its archive cannot be read). */
function archivedRuns(groups: IJobChoice[]): Promise<IArchivedRun[][]> {
  return Promise.all(
    groups.map(g =>
      get('/ranktable/jobs/{namespace}/{name}/runs', { path: g })
        .then(r => r.runs)
        .catch(() => [] as IArchivedRun[])
    )
  );
}

/** The runs found, one group per job name, each run once. */
class ChoiceGroups {
  private _groups = new Map<string, IJobChoice>();

  add(
    namespace: string,
    name: string,
    run: Omit<IRunChoice, 'namespace' | 'name'>
  ): void {
    const key = jobKey({ namespace, name });
    let g = this._groups.get(key);
    if (!g) {
      g = { namespace, name, runs: [] };
      this._groups.set(key, g);
    }
    if (run.uid && !g.runs.some(r => r.uid === run.uid)) {
      g.runs.push({ namespace, name, ...run });
    }
  }

  all(): IJobChoice[] {
    return [...this._groups.values()];
  }

  /** By name then namespace; in a group the current run first, then the newest. */
  sorted(): IJobChoice[] {
    for (const g of this._groups.values()) {
      g.runs.sort(
        (a, b) =>
          Number(b.current) - Number(a.current) ||
          (a.age ?? Infinity) - (b.age ?? Infinity)
      );
    }
    return this.all().sort(
      (a, b) =>
        a.name.localeCompare(b.name) || a.namespace.localeCompare(b.namespace)
    );
  }
}
