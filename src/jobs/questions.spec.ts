import { resubmitQuestion, stopQuestion } from './questions';
import { trans } from '../testing/fakes';

const run = { namespace: 'default', name: 'bert', uid: 'aaaaaaaa-1111' };
const row = (uid: string, phase: string) => ({
  namespace: 'default',
  name: 'bert',
  uid,
  phase,
  nodes: 2
});

describe('confirmations say what the action does', () => {
  it('Stop names the run and what goes', () => {
    expect(stopQuestion(trans, run)).toBe(
      'Stop bert (run aaaaaaaa)? Its logs are archived first, then its pods and rank-table ConfigMap are deleted.'
    );
  });

  it('Resubmit asks only when it stops a live run', () => {
    // nothing of the name on the pool (a stopped run), or the job has ended: nothing is stopped
    expect(resubmitQuestion(trans, run, undefined)).toBe('');
    expect(resubmitQuestion(trans, run, row(run.uid, 'Completed'))).toBe('');
    expect(resubmitQuestion(trans, run, row(run.uid, 'Failed'))).toBe('');
    expect(resubmitQuestion(trans, run, row(run.uid, 'Running'))).toBe(
      'Resubmit bert? The running run aaaaaaaa is stopped first (its logs archived, its pods deleted), then its spec is submitted again as a new run.'
    );
    // from an earlier run's view while another run of the name runs
    expect(resubmitQuestion(trans, run, row('bbbbbbbb-2222', 'Pending'))).toBe(
      'Resubmit bert? The running run bbbbbbbb is stopped first (its logs archived, its pods deleted), then the spec of run aaaaaaaa is submitted as a new run.'
    );
  });
});
