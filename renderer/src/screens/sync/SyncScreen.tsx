import { useEffect, useState } from 'react';
import { useBridgeEvent, useBridgeQuery } from '../../bridge/context.js';
import { EmptyState } from '../../components/EmptyState.js';
import { ErrorNotice } from '../../components/ErrorNotice.js';
import { Icon } from '../../components/Icon.js';
import { AddPairDialog } from './AddPairDialog.js';
import { PairCard } from './PairCard.js';

export function SyncScreen({ onBrowsePatient }: { onBrowsePatient: (patientId: string) => void }) {
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

  const addButton = (
    <button type="button" className="button primary" onClick={() => setAdding(true)}>
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
      <div className="pair-list">
        {pairs.data?.map((pair) => (
          <PairCard key={pair.id} pair={pair} onBrowsePatient={onBrowsePatient} onChanged={pairs.reload} />
        ))}
      </div>
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
