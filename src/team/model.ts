import { get } from '../api/client';
import type { components } from '../api/openapi';
import { Model } from '../ui/model';

/** The team's view of the pool (`GET /ranktable/team`, generated from openapi.yaml). */
export type ITeam = components['schemas']['Team'];

/** Read again this often while the Team view is open. */
export const TEAM_REFRESH_MS = 10_000;

/**
 * Every user's jobs on the shared pool with their owners, the queued jobs and the free NPUs per leaf
 * and per queue: read-only, read only while someone looks (nothing at page load).
 */
export class TeamModel extends Model {
  team: ITeam | null = null;
  error = '';

  /** Start reading (now, then every TEAM_REFRESH_MS) or stop. */
  follow(open: boolean): void {
    if (!open) {
      this.cancel('refresh');
      return;
    }
    if (this.pending('refresh')) {
      return; // already followed (a second toggle event)
    }
    void this.refresh();
    this.every('refresh', () => void this.refresh(), TEAM_REFRESH_MS);
  }

  async refresh(): Promise<void> {
    try {
      this.team = await get('/ranktable/team');
      this.error = '';
    } catch (e) {
      this.error = (e as Error)?.message ?? String(e);
    }
    this.emit();
  }
}
