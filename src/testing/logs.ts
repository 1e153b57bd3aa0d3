/** A run's live log as the specs start it (this file is not a test: jest runs only *.spec.ts(x)). */
import { LogsModel } from '../logs/model';
import { FakeStream } from './fakes';

/** A LogsModel of `run` following its log on a FakeStream the test drives. */
export function followedLogs(
  run = { namespace: 'default', name: 'bert', uid: 'u1' }
): { stream: FakeStream; logs: LogsModel } {
  const stream = new FakeStream();
  const logs = new LogsModel(run, stream as any);
  logs.start();
  return { stream, logs };
}
