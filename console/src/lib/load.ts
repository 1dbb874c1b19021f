/**
 * Loads what a page shows: the data, the failure (shown where the data would be), whether it is
 * loading, and `reload` after a change. An answer that arrives after the page moved on (other
 * parameters, or gone) is dropped.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export interface Loaded<T> {
  data: T | undefined;
  error: Error | undefined;
  loading: boolean;
  reload(): void;
}

export function useLoad<T>(load: () => Promise<T>, keys: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | undefined>();
  const [error, setError] = useState<Error | undefined>();
  const [loading, setLoading] = useState(true);
  const [round, setRound] = useState(0);
  const latest = useRef(0);
  useEffect(() => {
    const ticket = ++latest.current;
    setLoading(true);
    load().then(
      (value) => {
        if (ticket !== latest.current) return;
        setData(value);
        setError(undefined);
        setLoading(false);
      },
      (caught: unknown) => {
        if (ticket !== latest.current) return;
        setError(caught instanceof Error ? caught : new Error(String(caught)));
        setLoading(false);
      },
    );
    return () => {
      latest.current += 1;
    };
  }, [...keys, round]);
  const reload = useCallback(() => setRound((n) => n + 1), []);
  return { data, error, loading, reload };
}
