import { useState } from 'react';
import { useBridge } from '../../bridge/context.js';
import { toBridgeError, type BridgeError } from '../../bridge/errors.js';
import { ErrorNotice } from '../../components/ErrorNotice.js';
import { Icon } from '../../components/Icon.js';
import { saveBlob } from '../patients/download.js';
import { SyncHistory } from './SyncHistory.js';
import { WebhookEvents } from './WebhookEvents.js';
import { CaseAssignments } from './CaseAssignments.js';

type Tab = 'webhooks' | 'history' | 'cases';
const TABS: readonly Tab[] = ['webhooks', 'history', 'cases'];

export function ActivityScreen() {
  const client = useBridge();
  const [tab, setTab] = useState<Tab>('webhooks');
  const [exportError, setExportError] = useState<BridgeError | null>(null);
  const exportCsv = async () => {
    setExportError(null);
    try {
      const csv = await client.exportHistoryCsv();
      saveBlob(new Blob([csv], { type: 'text/csv;charset=utf-8' }), `patient-docs-sync-history-${new Date().toISOString().slice(0, 10)}.csv`);
    } catch (failure) {
      setExportError(toBridgeError(failure));
    }
  };
  return (
    <div className="screen">
      <header className="screen-header">
        <div>
          <h1>Activity</h1>
          <p className="screen-subtitle">Notifications from the server, the record of every upload and of every scanner case filed under a patient, for the clinic’s files.</p>
        </div>
        <button type="button" className="button" onClick={() => void exportCsv()}>
          <Icon name="download" size={16} /> Export sync history (CSV)
        </button>
      </header>
      {exportError ? <ErrorNotice error={exportError} title="The history cannot be exported" /> : null}
      <div className="tabs" role="tablist" aria-label="Activity">
        <TabButton tab="webhooks" current={tab} onSelect={setTab} label="Server notifications" />
        <TabButton tab="history" current={tab} onSelect={setTab} label="Sync history" />
        <TabButton tab="cases" current={tab} onSelect={setTab} label="Case assignments" />
      </div>
      {/* Focusable (WAI-ARIA tabs): in a narrow window the table scrolls sideways, and the keys must reach it. */}
      <div role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`} className="tab-panel" tabIndex={0}>
        {tab === 'webhooks' ? <WebhookEvents /> : tab === 'history' ? <SyncHistory /> : <CaseAssignments />}
      </div>
    </div>
  );
}

function TabButton({ tab, current, onSelect, label }: { tab: Tab; current: Tab; onSelect: (tab: Tab) => void; label: string }) {
  return (
    <button type="button" role="tab" id={`tab-${tab}`} aria-selected={tab === current} aria-controls={`panel-${tab}`} tabIndex={tab === current ? 0 : -1} className="tab" onClick={() => onSelect(tab)}
      onKeyDown={(event) => {
        if (event.key !== 'ArrowRight' && event.key !== 'ArrowLeft' && event.key !== 'Home' && event.key !== 'End') return;
        event.preventDefault();
        const index = TABS.indexOf(tab);
        const next: Tab = event.key === 'Home' ? TABS[0]! : event.key === 'End' ? TABS[TABS.length - 1]! : TABS[(index + (event.key === 'ArrowRight' ? 1 : TABS.length - 1)) % TABS.length]!;
        onSelect(next);
        // The focus goes with the selection (WAI-ARIA tabs), or it stays on the tab just left.
        document.getElementById(`tab-${next}`)?.focus();
      }}
    >
      {label}
    </button>
  );
}
