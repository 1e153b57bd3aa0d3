import { post } from '../api/client';
import type { paths } from '../api/openapi';
import { ILayoutResult } from './figure';

/** POST /ranktable/plan's body: a rank table, and the topology (none: the cluster's). */
type IPlanRequest =
  paths['/ranktable/plan']['post']['requestBody']['content']['application/json'];

/** A rank table's layout (given vs planned) on the cluster's topology, or on the topology file named. */
export async function planLayout(
  rankTable: string,
  topologyPath: string
): Promise<ILayoutResult> {
  const body: IPlanRequest = { ranktable: rankTable };
  if (topologyPath.trim()) {
    body.topology_path = topologyPath.trim();
  }
  return post('/ranktable/plan', {}, body);
}
