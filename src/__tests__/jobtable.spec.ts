import { phasesOf, queryJobs } from '../jobtable';

const rows = [
  { name: 'b', namespace: 'default', phase: 'Running', nodes: 4 },
  { name: 'a', namespace: 'default', phase: 'Pending', nodes: 16 },
  { name: 'c', namespace: 'team', phase: 'Running', nodes: 2 }
];

describe('jobtable', () => {
  it('searches any column', () => {
    expect(queryJobs(rows, { search: 'team' }).map(r => r.name)).toEqual(['c']);
  });
  it('filters by phase', () => {
    expect(queryJobs(rows, { phase: 'Running' }).map(r => r.name)).toEqual([
      'b',
      'c'
    ]);
    expect(queryJobs(rows, { phase: 'All' })).toHaveLength(3);
  });
  it('sorts numbers numerically both ways', () => {
    expect(queryJobs(rows, { sortKey: 'nodes' }).map(r => r.nodes)).toEqual([
      2, 4, 16
    ]);
    expect(
      queryJobs(rows, { sortKey: 'nodes', sortDir: 'desc' }).map(r => r.nodes)
    ).toEqual([16, 4, 2]);
  });
  it('lists phases', () => {
    expect(phasesOf(rows)).toEqual(['Pending', 'Running']);
  });
});
