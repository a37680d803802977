// A tiny observable value (auth state, dashboard info, live status) and the hook that re-renders
// a component when it changes.
import { useEffect, useState } from "preact/hooks";

/** A value with `get`, `set` and `subscribe(listener) -> unsubscribe`. */
export function createStore(initial) {
  let value = initial;
  const listeners = new Set();
  return {
    get: () => value,
    set(next) {
      if (next === value) return;
      value = next;
      for (const listener of [...listeners]) listener(value);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/** The store's current value; the component re-renders whenever it changes. */
export function useStore(store) {
  const [value, setValue] = useState(() => store.get());
  useEffect(() => {
    // It may have changed between the render and this effect.
    setValue(() => store.get());
    return store.subscribe((next) => setValue(() => next));
  }, [store]);
  return value;
}
