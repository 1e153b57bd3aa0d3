import { LogsModel } from './model';
import { RanktableAPIError, requestAPI } from '../api/request';
import { FakeStream, logMessage } from '../testing/fakes';

jest.mock('../api/request', () => {
  const actual = jest.requireActual('../api/request');
  return { ...actual, requestAPI: jest.fn() };
});

const request = requestAPI as jest.Mock;
const RUN = { namespace: 'default', name: 'bert', uid: 'old-uid' };

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await Promise.resolve();
  }
}

describe('LogsModel: an earlier run’s lines from the archive', () => {
  beforeEach(() => request.mockReset());

  it('reads the archive when the stream ends before any line (the run was replaced or stopped)', async () => {
    request.mockResolvedValue({
      run: 'old-uid',
      truncated: false,
      lines: [
        {
          pod: 'bert-0',
          node_rank: 0,
          timestamp: 't1',
          text: '[rank 3] old step 1'
        },
        {
          pod: 'bert-1',
          node_rank: 1,
          timestamp: 't1',
          text: '[rank 11] old step 1'
        }
      ]
    });
    const stream = new FakeStream();
    const logs = new LogsModel(RUN, stream as any);
    logs.start();
    stream.last().handlers.onEnd();
    await settle();
    expect(request).toHaveBeenCalledWith('jobs/default/bert/runs/old-uid/logs');
    expect(
      logs.buffer.toArray().map(l => [l.pod, l.rank, l.rankId, l.text])
    ).toEqual([
      ['bert-0', 0, 3, '[rank 3] old step 1'],
      ['bert-1', 1, 11, '[rank 11] old step 1']
    ]);
    expect(logs.status).toBe('archived');
    logs.setNodeRanks('1');
    expect(logs.view.toArray().map(l => l.pod)).toEqual(['bert-1']);
    logs.dispose();
  });

  it('keeps the streamed lines of a run that ends after it was followed (no archive read)', async () => {
    const stream = new FakeStream();
    const logs = new LogsModel(RUN, stream as any);
    logs.start();
    stream
      .last()
      .handlers.onData(
        logMessage([{ pod: 'bert-0', rank: 0, ts: '1', text: 'live line' }])
      );
    stream.last().handlers.onEnd();
    await settle();
    expect(request).not.toHaveBeenCalled();
    expect(logs.status).toBe('ended');
    logs.dispose();
  });

  it('no archive (404) leaves the run ended without an error; another failure is shown', async () => {
    request.mockRejectedValueOnce(
      new RanktableAPIError('no archived run', 404, 'not_found', null)
    );
    const logs = new LogsModel(RUN, new FakeStream() as any);
    await logs.loadArchive();
    expect(logs.buffer.size).toBe(0);
    expect(logs.error).toBe('');
    request.mockRejectedValueOnce(
      new RanktableAPIError('archive unreadable', 500, 'internal', null)
    );
    await logs.loadArchive();
    expect(logs.error).toBe('archive unreadable');
    logs.dispose();
  });
});
