/**
 * Saved versions of a composed job: at most one per minute (a newer save within the same minute
 * replaces it), newest first, bounded, with rollback.
 */
export interface IVersion<T> {
  savedAt: number;
  label: string;
  value: T;
}

export const MINUTE = 60_000;

export function saveVersion<T>(
  versions: IVersion<T>[],
  value: T,
  now: number,
  label = '',
  limit = 50
): IVersion<T>[] {
  const entry: IVersion<T> = { savedAt: now, label, value };
  const latest = versions[0];
  if (latest && now - latest.savedAt < MINUTE) {
    return [entry, ...versions.slice(1)].slice(0, limit);
  }
  return [entry, ...versions].slice(0, limit);
}

/** Rolling back keeps history: the restored value becomes the newest version. */
export function rollback<T>(
  versions: IVersion<T>[],
  index: number,
  now: number
): { value: T; versions: IVersion<T>[] } {
  const target = versions[index];
  if (!target) {
    throw new Error(`no saved version ${index}`);
  }
  const label = `rollback to ${new Date(target.savedAt).toISOString()}`;
  return {
    value: target.value,
    versions: saveVersion(versions, target.value, now, label)
  };
}
