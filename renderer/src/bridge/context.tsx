import { createContext, useCallback, useContext, useEffect, useRef, useState, type Dispatch, type ReactNode, type SetStateAction } from 'react';
import type { BridgeClient, BridgeEvent } from '../../../shared/bridge.js';
import type { BridgeKind } from './connect.js';
import { toBridgeError, type BridgeError } from './errors.js';

interface BridgeContextValue {
  client: BridgeClient;
  kind: BridgeKind;
}

const BridgeContext = createContext<BridgeContextValue | null>(null);

export function BridgeProvider({ client, kind, children }: BridgeContextValue & { children: ReactNode }) {
  return <BridgeContext.Provider value={{ client, kind }}>{children}</BridgeContext.Provider>;
}

export function useBridge(): BridgeClient {
  return useBridgeContext().client;
}

export function useBridgeKind(): BridgeKind {
  return useBridgeContext().kind;
}

function useBridgeContext(): BridgeContextValue {
  const value = useContext(BridgeContext);
  if (!value) throw new Error('useBridge outside BridgeProvider');
  return value;
}

/** Subscribes for the component's lifetime; the latest handler is always the one called. */
export function useBridgeEvent(handler: (event: BridgeEvent) => void): void {
  const client = useBridge();
  const handlerRef = useRef(handler);
  handlerRef.current = handler;
  useEffect(() => client.onEvent((event) => handlerRef.current(event)), [client]);
}

export interface QueryState<T> {
  data: T | undefined;
  error: BridgeError | null;
  loading: boolean;
  reload: () => void;
  /** A value, or a function of the latest value (events arriving back to back must not overwrite each other). */
  setData: Dispatch<SetStateAction<T | undefined>>;
}

/** Runs a bridge call when its inputs change; an answer to an outdated call is dropped. */
export function useBridgeQuery<T>(load: (client: BridgeClient) => Promise<T>, inputs: readonly unknown[]): QueryState<T> {
  const client = useBridge();
  const [data, setData] = useState<T>();
  const [error, setError] = useState<BridgeError | null>(null);
  const [loading, setLoading] = useState(true);
  const [generation, setGeneration] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    let current = true;
    setLoading(true);
    loadRef.current(client).then(
      (value) => {
        if (!current) return;
        setData(value);
        setError(null);
        setLoading(false);
      },
      (failure: unknown) => {
        if (!current) return;
        setError(toBridgeError(failure));
        setLoading(false);
      },
    );
    return () => {
      current = false;
    };
  }, [client, generation, ...inputs]);
  const reload = useCallback(() => setGeneration((value) => value + 1), []);
  return { data, error, loading, reload, setData };
}
