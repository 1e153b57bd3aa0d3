import { ISignal, Signal } from '@lumino/signaling';

import { get } from '../api/client';
import type { components } from '../api/openapi';
import { Model } from '../ui/model';

/** One decision of the server's auto-resume policy (`GET /ranktable/recovery`). */
export type IRecoveryDecision = components['schemas']['RecoveryDecision'];

export const RECOVERY_EVERY_MS = 3000;

/**
 * The auto-resume policy's decisions, each once: polled while the server has the policy on
 * (`c.Ranktable.auto_resume`); a server without it is asked once.
 */
export class RecoveryModel extends Model {
  private _decided = new Signal<this, IRecoveryDecision>(this);
  private _since = Date.now() / 1000; // decisions taken before the page opened were shown then
  enabled = false;

  get decided(): ISignal<this, IRecoveryDecision> {
    return this._decided;
  }

  async poll(): Promise<void> {
    try {
      const got = await get('/ranktable/recovery', {
        query: { since: this._since }
      });
      this.enabled = got.enabled;
      for (const event of got.events) {
        this._since = Math.max(this._since, event.at);
        this._decided.emit(event);
      }
    } catch {
      return; // the server is away: the next poll asks again
    }
  }

  start(): void {
    void this.poll().then(() => {
      if (this.enabled) {
        this.every('recovery', () => void this.poll(), RECOVERY_EVERY_MS);
      }
    });
  }
}
