/**
 * Pure log-view logic: the line model, filters, search highlighting, error detection and gap-free
 * merging after a reconnect.
 */
import type { components } from '../api/openapi';

export interface ILogLine {
  pod: string;
  /** The pod's node rank (server index after route planning), as the server tags each line. */
  rank: number | null;
  ts: string;
  text: string;
  /** The rank id the line names (`rank 13`, `[rank13]`, `RANK_ID=13`), parsed once on arrival. */
  rankId?: number | null;
}

/**
 * One pod's lines in a `logs` stream message (`data.pods`): `n` lines, their stamps and their texts each
 * joined by newlines (no line holds one). Columns, not an object per line: the server's JSON of the line
 * objects was a third of its time at 100,000 lines/s (a group: ~3x less), and the browser parses fewer.
 */
export type ILogGroup = components['schemas']['LogGroup'];

/** The lines of a `logs` stream message's groups, in order. */
export function linesOfGroups(groups: ILogGroup[]): ILogLine[] {
  const out: ILogLine[] = [];
  for (const g of groups) {
    const stamps = g.ts.split('\n');
    const texts = g.text.split('\n');
    for (let i = 0; i < g.n; i++) {
      out.push({ pod: g.pod, rank: g.rank, ts: stamps[i], text: texts[i] });
    }
  }
  return out;
}

export interface ILogFilter {
  pods?: string[];
  /** node ranks (one per pod/server) */
  nodeRanks?: number[];
  /** rank ids (one per NPU process), as the lines name them */
  rankIds?: number[];
  search?: string;
  errorsOnly?: boolean;
}

const RANK_ID_RE = /\brank(?:[ _-]?id)?\s*[:=#]?\s*\[?(\d{1,6})\b/i;

/** The rank id a training log line names, or null (launchers and frameworks print it differently). */
export function rankIdOf(text: string): number | null {
  const m = RANK_ID_RE.exec(text);
  return m ? parseInt(m[1], 10) : null;
}

/** HCCL / CANN error codes and Python failures worth a red line. */
const ERROR_RE =
  /(Traceback \(most recent call last\)|\b[A-Z][A-Za-z]*(Error|Exception)\b|\[ERROR\]|\bERROR\b|\bE[A-Z]\d{4}\b|HCCL.*(fail|error|timeout)|\bFATAL\b|Segmentation fault|core dumped|can't open file|\[Errno \d+\]|out of memory|OOMKilled|Watchdog caught|link (is )?down|exitcode\s*:\s*-?\d+)/i;

export function isErrorLine(text: string): boolean {
  return ERROR_RE.test(text);
}

export function matchesFilter(line: ILogLine, filter: ILogFilter): boolean {
  if (filter.pods && filter.pods.length && !filter.pods.includes(line.pod)) {
    return false;
  }
  if (
    filter.nodeRanks &&
    filter.nodeRanks.length &&
    (line.rank === null || !filter.nodeRanks.includes(line.rank))
  ) {
    return false;
  }
  if (filter.rankIds && filter.rankIds.length) {
    const id = line.rankId === undefined ? rankIdOf(line.text) : line.rankId;
    if (id === null || !filter.rankIds.includes(id)) {
      return false;
    }
  }
  if (filter.errorsOnly && !isErrorLine(line.text)) {
    return false;
  }
  if (
    filter.search &&
    !line.text.toLowerCase().includes(filter.search.toLowerCase())
  ) {
    return false;
  }
  return true;
}

export interface ISegment {
  text: string;
  match: boolean;
}

/** Split `text` into plain and matching segments (case-insensitive) for highlighting. */
export function highlight(text: string, search: string): ISegment[] {
  if (!search) {
    return [{ text, match: false }];
  }
  const out: ISegment[] = [];
  const lower = text.toLowerCase();
  const needle = search.toLowerCase();
  let pos = 0;
  for (;;) {
    const hit = lower.indexOf(needle, pos);
    if (hit < 0) {
      break;
    }
    if (hit > pos) {
      out.push({ text: text.slice(pos, hit), match: false });
    }
    out.push({ text: text.slice(hit, hit + needle.length), match: true });
    pos = hit + needle.length;
  }
  if (pos < text.length) {
    out.push({ text: text.slice(pos), match: false });
  }
  return out;
}

/** Parse a rank filter like `0,2-4` into [0,2,3,4]; null when malformed. */
export function parseRanks(text: string): number[] | null {
  const out: number[] = [];
  for (const part of text.split(',').map(p => p.trim())) {
    if (!part) {
      continue;
    }
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) {
      return null;
    }
    const a = parseInt(m[1], 10);
    const b = m[2] !== undefined ? parseInt(m[2], 10) : a;
    if (b < a || b - a > 100000) {
      return null;
    }
    for (let r = a; r <= b; r++) {
      out.push(r);
    }
  }
  return out;
}

/**
 * Remembers, per pod, the newest timestamp seen and how many lines carried it, so that after a
 * reconnect (re-subscribing from that timestamp) repeated lines are dropped and nothing is lost.
 */
export class LogMerger {
  private _last = new Map<string, { ts: string; texts: Map<string, number> }>();
  private _replay = new Map<
    string,
    { ts: string; texts: Map<string, number> }
  >();

  /** The resume point to send when re-subscribing: `{pod: ts}`. */
  since(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [pod, v] of this._last) {
      out[pod] = v.ts;
    }
    return out;
  }

  /** The stream is being re-opened from `since()`: expect each pod's boundary lines once more. */
  beginReplay(): void {
    this._replay = new Map(
      Array.from(this._last, ([pod, v]) => [
        pod,
        { ts: v.ts, texts: new Map(v.texts) }
      ])
    );
  }

  /** Keep only the lines not already seen; record the new ones. */
  accept(lines: ILogLine[]): ILogLine[] {
    const fresh: ILogLine[] = [];
    for (const line of lines) {
      const boundary = this._replay.get(line.pod);
      if (boundary) {
        if (line.ts < boundary.ts) {
          continue;
        }
        if (line.ts === boundary.ts) {
          const left = boundary.texts.get(line.text) ?? 0;
          if (left > 0) {
            boundary.texts.set(line.text, left - 1);
            continue;
          }
        } else {
          this._replay.delete(line.pod);
        }
      }
      fresh.push(line);
      const last = this._last.get(line.pod);
      if (!last || line.ts > last.ts) {
        this._last.set(line.pod, {
          ts: line.ts,
          texts: new Map([[line.text, 1]])
        });
      } else if (line.ts === last.ts) {
        last.texts.set(line.text, (last.texts.get(line.text) ?? 0) + 1);
      }
    }
    return fresh;
  }
}
