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

/**
 * Runs a bridge call when its inputs change; an answer to an outdated call is dropped. Events come
 * on their own channel, so one told while the call is on its way may be newer than its answer:
 * updates given as functions of the latest value in that time are applied to the answer too when it
 * arrives (each must keep the newer of what it holds and what it brings).
 */
export function useBridgeQuery<T>(load: (client: BridgeClient) => Promise<T>, inputs: readonly unknown[]): QueryState<T> {
  const client = useBridge();
  const [data, setLoaded] = useState<T>();
  const [error, setError] = useState<BridgeError | null>(null);
  const [loading, setLoading] = useState(true);
  const [generation, setGeneration] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  // The updates told since the running call was sent; null when no call is on its way.
  const toldRef = useRef<Array<(value: T | undefined) => T | undefined> | null>(null);
  useEffect(() => {
    let current = true;
    setLoading(true);
    const told: Array<(value: T | undefined) => T | undefined> = [];
    toldRef.current = told;
    loadRef.current(client).then(
      (value) => {
        if (!current) return;
        toldRef.current = null;
        setLoaded(told.reduce<T | undefined>((latest, update) => update(latest), value));
        setError(null);
        setLoading(false);
      },
      (failure: unknown) => {
        if (!current) return;
        toldRef.current = null;
        setError(toBridgeError(failure));
        setLoading(false);
      },
    );
    return () => {
      current = false;
    };
  }, [client, generation, ...inputs]);
  const setData = useCallback<Dispatch<SetStateAction<T | undefined>>>((next) => {
    if (typeof next === 'function') toldRef.current?.push(next as (value: T | undefined) => T | undefined);
    setLoaded(next);
  }, []);
  const reload = useCallback(() => setGeneration((value) => value + 1), []);
  return { data, error, loading, reload, setData };
}
