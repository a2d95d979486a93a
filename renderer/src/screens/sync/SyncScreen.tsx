import { useEffect, useRef, useState } from 'react';
import type { PairView } from '../../../../shared/bridge.js';
import { useBridgeEvent, useBridgeQuery } from '../../bridge/context.js';
import { EmptyState } from '../../components/EmptyState.js';
import { ErrorNotice } from '../../components/ErrorNotice.js';
import { Icon } from '../../components/Icon.js';
import { AddPairDialog } from './AddPairDialog.js';
import { PairCard } from './PairCard.js';
import { Welcome } from './Welcome.js';
import { folderNeedsAttention, AttentionSummary } from './AttentionSummary.js';

export function SyncScreen({ onBrowsePatient, demoPatientId = null }: { onBrowsePatient: (patientId: string) => void; /** The embedded server's demo patient, if any. */ demoPatientId?: string | null }) {
  const pairs = useBridgeQuery((client) => client.listPairs(), []);
  const [adding, setAdding] = useState(false);
  // After "Sync a folder" the focus goes to the new folder's card once it is listed (the button that
  // opened the dialog may have gone with the empty list).
  const [focusPair, setFocusPair] = useState<string | null>(null);
  useEffect(() => {
    if (!focusPair) return;
    const card = document.querySelector<HTMLElement>(`.pair-card[data-pair-id="${CSS.escape(focusPair)}"]`);
    if (!card) return;
    card.focus();
    setFocusPair(null);
  }, [focusPair, pairs.data]);
  useBridgeEvent((event) => {
    if (event.type === 'pairs') pairs.setData(event.pairs);
  });
  // After "Stop syncing" the card leaves with its folder: the focus goes to the next card (or the one
  // before, or "Add folder" when none remains) once the list no longer holds it, and the screen reader
  // hears that it is done. Chosen when the stop is confirmed, so a list updated by the engine before the
  // call returns still finds it.
  const [stopping, setStopping] = useState<{ pairId: string; next: string | null; folder: string } | null>(null);
  const addRef = useRef<HTMLButtonElement>(null);
  const [said, setSaid] = useState('');
  const announce = (message: string) => {
    // The same words twice in a row are not read again by every screen reader: clear first.
    setSaid('');
    setTimeout(() => setSaid(message), 50);
  };
  useEffect(() => {
    if (!stopping || !pairs.data || pairs.data.some((pair) => pair.id === stopping.pairId)) return;
    setStopping(null);
    announce(`Stopped syncing ${stopping.folder}. Files already uploaded stay on the server.`);
    // Only if the focus went with the card (not if staff have moved on meanwhile).
    const active = document.activeElement;
    if (active && active !== document.body && active.id !== 'main') return;
    const card = stopping.next ? document.querySelector<HTMLElement>(`.pair-card[data-pair-id="${CSS.escape(stopping.next)}"]`) : null;
    (card ?? addRef.current)?.focus();
  }, [stopping, pairs.data]);
  const onStopping = (pair: PairView, confirmed: boolean) => {
    if (!confirmed) return setStopping(null);
    const list = orderedPairs(pairs.data ?? []);
    const index = list.findIndex((entry) => entry.id === pair.id);
    const next = list[index + 1] ?? list[index - 1] ?? null;
    setStopping({ pairId: pair.id, next: next?.id ?? null, folder: pair.folder });
  };

  const addButton = (
    <button ref={addRef} type="button" className="button primary" onClick={() => setAdding(true)}>
      <Icon name="plus" size={16} /> Add folder
    </button>
  );
  return (
    <div className="screen">
      <header className="screen-header">
        <div>
          <h1>Sync</h1>
          <p className="screen-subtitle">Scan folders on this computer and the patient records they upload to.</p>
        </div>
        {pairs.data && pairs.data.length > 0 ? addButton : null}
      </header>
      {pairs.error ? <ErrorNotice error={pairs.error} title="The folders cannot be shown" /> : null}
      {pairs.data && pairs.data.length === 0 ? (
        <EmptyState icon="folder" title="No folders are synced yet" action={addButton}>
          Choose the folder your scanner exports into and the patient it belongs to. New files are uploaded and checked automatically.
        </EmptyState>
      ) : null}
      {pairs.data ? <AttentionSummary pairs={pairs.data} /> : null}
      {pairs.data ? <Welcome pairs={pairs.data} demoPatientId={demoPatientId} /> : null}
      <div className="pair-list">
        {pairs.data && orderedPairs(pairs.data).map((pair) => (
          <PairCard key={pair.id} pair={pair} demo={pair.patientId === demoPatientId} onBrowsePatient={onBrowsePatient} onChanged={pairs.reload} onStopping={(confirmed) => onStopping(pair, confirmed)} announce={announce} />
        ))}
      </div>
      <p className="visually-hidden" role="status" aria-live="polite" data-testid="sync-screen-announcements">
        {said}
      </p>
      <AddPairDialog
        open={adding}
        onClose={() => setAdding(false)}
        onAdded={(pair) => {
          setAdding(false);
          setFocusPair(pair.id);
          pairs.reload();
        }}
      />
    </div>
  );
}

/** The folders that need someone first (in their own order), then the others: a failure is never below a long list. */
function orderedPairs(pairs: readonly PairView[]): PairView[] {
  return [...pairs.filter(folderNeedsAttention), ...pairs.filter((pair) => !folderNeedsAttention(pair))];
}
