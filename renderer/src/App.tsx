import { useState } from 'react';
import type { AppStatus } from '../../shared/bridge.js';
import { useBridgeEvent, useBridgeQuery } from './bridge/context.js';
import { ErrorNotice, InfoNotice } from './components/ErrorNotice.js';
import { Sidebar, type Screen } from './components/Sidebar.js';
import { SyncAnnouncer } from './components/SyncAnnouncer.js';
import { ActivityScreen } from './screens/activity/ActivityScreen.js';
import { FirstRunScreen } from './screens/first-run/FirstRunScreen.js';
import { InboxScreen } from './screens/inbox/InboxScreen.js';
import { PatientBrowserScreen } from './screens/patients/PatientBrowserScreen.js';
import { SettingsScreen } from './screens/settings/SettingsScreen.js';
import { SyncScreen } from './screens/sync/SyncScreen.js';
import { folderNeedsAttention } from './screens/sync/AttentionSummary.js';

export interface Navigation {
  screen: Screen;
  patientId?: string | undefined;
}

export function App() {
  const status = useBridgeQuery((client) => client.getStatus(), []);
  const [navigation, setNavigation] = useState<Navigation>({ screen: 'sync' });
  const configured = status.data !== null && status.data !== undefined && status.data.mode !== 'unconfigured';
  const pairs = useBridgeQuery((client) => (configured ? client.listPairs() : Promise.resolve([])), [configured]);
  useBridgeEvent((event) => {
    if (event.type === 'status') status.setData(event.status);
    if (event.type === 'pairs') pairs.setData(event.pairs);
  });

  if (status.error && !status.data) {
    return (
      <main className="splash">
        <h1 className="visually-hidden">Patient Docs</h1>
        <ErrorNotice title="Patient Docs cannot start" error={status.error} />
      </main>
    );
  }
  if (!status.data) return <main className="splash" aria-busy="true"><div className="spinner" role="status" aria-label="Loading" /></main>;
  if (status.data.mode === 'unconfigured') return <FirstRunScreen onConfigured={(next: AppStatus) => status.setData(next)} />;

  return (
    <div className="app-shell">
      <Sidebar status={status.data} current={navigation.screen} onNavigate={(screen) => setNavigation({ screen })} attention={(pairs.data ?? []).filter(folderNeedsAttention).length} />
      <main className="app-main" id="main" tabIndex={-1}>
        {status.data.notices.map((notice) => (
          <InfoNotice key={notice} tone="warning">
            {notice}
          </InfoNotice>
        ))}
        <CurrentScreen navigation={navigation} status={status.data} onNavigate={setNavigation} />
      </main>
      <SyncAnnouncer />
    </div>
  );
}

function CurrentScreen({ navigation, status, onNavigate }: { navigation: Navigation; status: AppStatus; onNavigate: (next: Navigation) => void }) {
  switch (navigation.screen) {
    case 'sync':
      return <SyncScreen demoPatientId={status.demoPatientId ?? null} onBrowsePatient={(patientId) => onNavigate({ screen: 'patients', patientId })} />;
    case 'inbox':
      return <InboxScreen />;
    case 'patients':
      return <PatientBrowserScreen initialPatientId={navigation.patientId} />;
    case 'activity':
      return <ActivityScreen />;
    case 'settings':
      return <SettingsScreen status={status} />;
  }
}
