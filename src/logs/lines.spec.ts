import {
  LogMerger,
  highlight,
  isErrorLine,
  linesOfGroups,
  matchesFilter,
  parseRanks,
  rankIdOf
} from './lines';

const line = (pod: string, ts: string, text: string, rank = 0) => ({
  pod,
  ts,
  text,
  rank
});

describe('logs', () => {
  it('detects HCCL and Python error lines', () => {
    expect(isErrorLine('Traceback (most recent call last):')).toBe(true);
    expect(isErrorLine('RuntimeError: HCCL init failed')).toBe(true);
    expect(isErrorLine('[ERROR] HCCL(123) EI0006 timeout')).toBe(true);
    expect(isErrorLine('step 10 loss 1.23')).toBe(false);
    expect(
      isErrorLine(
        "/usr/bin/python3: can't open file '/root/train.py': [Errno 2] No such file or directory"
      )
    ).toBe(true);
    expect(isErrorLine('container OOMKilled (exit 137)')).toBe(true);
    expect(isErrorLine('rank 3 step 4 loss 2.1 lr 1e-4')).toBe(false);
  });
  it('filters by pod, rank, search and errors', () => {
    const l = line('job-w-1', 't', 'loss 0.5', 1);
    expect(matchesFilter(l, { pods: ['job-w-1'] })).toBe(true);
    expect(matchesFilter(l, { pods: ['job-w-0'] })).toBe(false);
    expect(matchesFilter(l, { nodeRanks: [0, 2] })).toBe(false);
    expect(matchesFilter(l, { nodeRanks: [1] })).toBe(true);
    expect(matchesFilter(l, { search: 'LOSS' })).toBe(true);
    expect(matchesFilter(l, { errorsOnly: true })).toBe(false);
  });
  it('filters by the rank id a line names, not by node rank', () => {
    const l = line('job-w-1', 't', '[rank 13] step 5 loss 0.5', 1);
    expect(rankIdOf(l.text)).toBe(13);
    expect(rankIdOf('RANK_ID=7 starting')).toBe(7);
    expect(rankIdOf('epoch 1 step 2')).toBeNull();
    expect(matchesFilter(l, { rankIds: [13] })).toBe(true);
    expect(matchesFilter(l, { rankIds: [1] })).toBe(false);
    expect(matchesFilter(l, { nodeRanks: [1], rankIds: [13] })).toBe(true);
  });
  it('highlights every match case-insensitively', () => {
    expect(highlight('Loss loss', 'loss')).toEqual([
      { text: 'Loss', match: true },
      { text: ' ', match: false },
      { text: 'loss', match: true }
    ]);
    expect(highlight('abc', '')).toEqual([{ text: 'abc', match: false }]);
  });
  it('unpacks the stream’s per-pod groups in order, empty lines kept', () => {
    // as the server sends them: each pod's stamps and texts joined by newlines
    const lines = linesOfGroups([
      { pod: 'a', rank: 0, n: 3, ts: 't1\nt2\nt3', text: 'x\n\nz' },
      { pod: 'b', rank: null, n: 1, ts: 't1', text: '' },
      { pod: 'a', rank: 0, n: 1, ts: 't4', text: 'w' }
    ]);
    expect(lines).toEqual([
      { pod: 'a', rank: 0, ts: 't1', text: 'x' },
      { pod: 'a', rank: 0, ts: 't2', text: '' },
      { pod: 'a', rank: 0, ts: 't3', text: 'z' },
      { pod: 'b', rank: null, ts: 't1', text: '' },
      { pod: 'a', rank: 0, ts: 't4', text: 'w' }
    ]);
  });
  it('parses rank lists', () => {
    expect(parseRanks('0, 2-4')).toEqual([0, 2, 3, 4]);
    expect(parseRanks('x')).toBeNull();
    expect(parseRanks('4-2')).toBeNull();
  });
  it('merges a replay after reconnect without gaps or repeats', () => {
    const m = new LogMerger();
    const first = [
      line('a', '1', 'x'),
      line('a', '2', 'y'),
      line('a', '2', 'y'),
      line('b', '1', 'z')
    ];
    expect(m.accept(first)).toHaveLength(4);
    expect(m.since()).toEqual({ a: '2', b: '1' });
    const replay = [
      line('a', '2', 'y'),
      line('a', '2', 'y'),
      line('a', '2', 'y'),
      line('a', '3', 'w'),
      line('b', '1', 'z'),
      line('b', '2', 'v')
    ];
    m.beginReplay();
    const fresh = m.accept(replay);
    expect(fresh.map(l => l.pod + l.ts + l.text)).toEqual([
      'a2y',
      'a3w',
      'b2v'
    ]);
  });
  it('keeps identical lines at one instant in normal streaming', () => {
    const m = new LogMerger();
    expect(m.accept([line('a', '1', 'x')])).toHaveLength(1);
    expect(m.accept([line('a', '1', 'x')])).toHaveLength(1);
  });
});
