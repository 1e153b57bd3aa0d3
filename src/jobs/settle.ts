/**
 * Quiet phase notifications: a job's phase must hold for a moment before it is announced, so a flap
 * (Running -> Pending -> Running while a pod restarts) says nothing, and a change is announced once, from
 * the phase last announced. Pure (timers injected) so the rules are tested without JupyterLab.
 */

/** How long a new phase must hold before its toast. */
export const PHASE_SETTLE_MS = 3000;

export interface IPhaseChange<J> {
  job: J;
  from: string;
  to: string;
}

interface IPending<J> {
  /** the phase last announced (or the phase before the first change of this round) */
  from: string;
  job: J;
  timer: ReturnType<typeof setTimeout>;
}

export class PhaseSettler<J extends { phase: string }> {
  private _pending = new Map<string, IPending<J>>();

  constructor(
    private _announce: (change: IPhaseChange<J>) => void,
    private _delayMs = PHASE_SETTLE_MS
  ) {}

  /** A job of `key` moved from `previous` to `job.phase`; `quiet`: never announce it (terminal phases). */
  change(key: string, previous: string, job: J, quiet = false): void {
    const pending = this._pending.get(key);
    const from = pending?.from ?? previous;
    if (pending) {
      clearTimeout(pending.timer);
      this._pending.delete(key);
    }
    if (quiet || job.phase === from) {
      return; // announced elsewhere, or back where it was: nothing happened
    }
    const timer = setTimeout(() => {
      this._pending.delete(key);
      this._announce({ job, from, to: job.phase });
    }, this._delayMs);
    this._pending.set(key, { from, job, timer });
  }

  dispose(): void {
    for (const p of this._pending.values()) {
      clearTimeout(p.timer);
    }
    this._pending.clear();
  }
}

/** The stop's note on archived logs, or null when it is no news ("0 new log lines ..."). */
export function stoppedNotice(logs: string | null | undefined): string | null {
  if (!logs || /^0 new log lines\b/.test(logs)) {
    return null;
  }
  return logs;
}
