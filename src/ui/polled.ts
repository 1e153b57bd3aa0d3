import * as React from 'react';

/** Fetch now and every `refreshMs` while mounted; the latest value and error (stale answers dropped). */
export function usePolled<T>(
  fetcher: () => Promise<T>,
  deps: React.DependencyList,
  refreshMs = 5000,
  onValue?: (value: T) => void
): [T | null, string | null] {
  const [value, setValue] = React.useState<T | null>(null);
  const [error, setError] = React.useState<string | null>(null);
  React.useEffect(() => {
    let live = true;
    const load = () =>
      fetcher()
        .then(data => {
          if (live) {
            setValue(data);
            setError(null);
            onValue?.(data);
          }
        })
        .catch(reason => {
          if (live) {
            setError(String(reason?.message ?? reason));
          }
        });
    void load();
    const timer = window.setInterval(load, refreshMs);
    return () => {
      live = false;
      window.clearInterval(timer);
    };
  }, [...deps, refreshMs, onValue]);
  return [value, error];
}
