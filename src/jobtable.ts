/** Search, phase filter and sorting for the Jobs table, kept pure for tests. */
export interface IJobRow {
  name: string;
  namespace: string;
  phase: string;
  [key: string]: unknown;
}

export interface IJobQuery {
  search?: string;
  phase?: string;
  sortKey?: string;
  sortDir?: 'asc' | 'desc';
}

function compare(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') {
    return a - b;
  }
  if (a === undefined || a === null) {
    return b === undefined || b === null ? 0 : -1;
  }
  if (b === undefined || b === null) {
    return 1;
  }
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}

export function queryJobs<T extends IJobRow>(rows: T[], q: IJobQuery): T[] {
  const needle = (q.search ?? '').trim().toLowerCase();
  let out = rows.filter(r => {
    if (q.phase && q.phase !== 'All' && r.phase !== q.phase) {
      return false;
    }
    if (!needle) {
      return true;
    }
    return Object.values(r).some(
      v =>
        (typeof v === 'string' || typeof v === 'number') &&
        String(v).toLowerCase().includes(needle)
    );
  });
  if (q.sortKey) {
    const key = q.sortKey;
    const sign = q.sortDir === 'desc' ? -1 : 1;
    out = [...out].sort(
      (a, b) => sign * compare(a[key], b[key]) || compare(a.name, b.name)
    );
  }
  return out;
}

export function phasesOf(rows: IJobRow[]): string[] {
  return Array.from(new Set(rows.map(r => r.phase))).sort();
}
