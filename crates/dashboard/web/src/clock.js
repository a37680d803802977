// `useNow`: the current time, re-rendering every second, so that ages and durations tick
// without asking the server.
import { useEffect, useState } from "preact/hooks";

export function useNow(intervalMs = 1000) {
  const [now, setNow] = useState(Date.now);
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), intervalMs);
    return () => clearInterval(timer);
  }, [intervalMs]);
  return now;
}
