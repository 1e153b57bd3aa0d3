import { get } from '../api/client';
import type { components } from '../api/openapi';
import { Model } from '../ui/model';
import { IRunRef } from '../jobs/model';

/** `GET .../lineage`: the job's runs as one lineage, each fault's cost, the goodput (openapi.yaml). */
export type ILineage = components['schemas']['Lineage'];
export type ILineageFault = components['schemas']['LineageFault'];

/** A run's lineage for its Job view: read when the view opens, again on refresh or after a resume. */
export class LineageModel extends Model {
  lineage: ILineage | null = null;
  error = '';

  constructor(readonly run: IRunRef) {
    super();
  }

  async load(): Promise<void> {
    try {
      this.lineage = await get('/ranktable/jobs/{namespace}/{name}/lineage', {
        path: { namespace: this.run.namespace, name: this.run.name }
      });
      this.error = '';
    } catch (e) {
      const err = e as { status?: number; message?: string };
      // no archived run yet: nothing to show, not an error
      this.error = err.status === 404 ? '' : (err.message ?? String(e));
    }
    this.emit();
  }
}

/** "12.3 s" or "–". */
export function seconds(value: number | null | undefined): string {
  return value === null || value === undefined ? '–' : `${value.toFixed(1)} s`;
}
