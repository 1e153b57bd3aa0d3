import * as React from 'react';
import { ISignal } from '@lumino/signaling';

/** Re-render on a model's `changed`, and refresh it now and every `refreshMs` while mounted. */
export function useListModel(
  model: { changed: ISignal<any, void>; refresh: () => Promise<void> },
  refreshMs: number
): void {
  const [, setTick] = React.useState(0);
  React.useEffect(() => {
    const onChange = () => setTick(t => t + 1);
    model.changed.connect(onChange);
    void model.refresh();
    const timer = window.setInterval(() => void model.refresh(), refreshMs);
    return () => {
      model.changed.disconnect(onChange);
      window.clearInterval(timer);
    };
  }, [model, refreshMs]);
}
