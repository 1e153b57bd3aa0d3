import * as React from 'react';
import { ISignal } from '@lumino/signaling';

/**
 * Render again whenever `signal` fires (a model's `changed`), and every `tickMs` when given (ages and
 * countdowns that move without a change). The one hook between Lumino signals and React state.
 */
export function useSignal(
  signal: ISignal<unknown, unknown>,
  tickMs = 0
): number {
  const [tick, setTick] = React.useState(0);
  React.useEffect(() => {
    const onChange = () => setTick(t => t + 1);
    signal.connect(onChange);
    const timer = tickMs ? setInterval(onChange, tickMs) : undefined;
    return () => {
      signal.disconnect(onChange);
      if (timer !== undefined) {
        clearInterval(timer);
      }
    };
  }, [signal, tickMs]);
  return tick;
}
