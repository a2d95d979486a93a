import type { AppStatus } from '../../../shared/bridge.js';
import { Icon, type IconName } from './Icon.js';

export type Screen = 'sync' | 'patients' | 'activity' | 'settings';

const ITEMS: Array<{ screen: Screen; label: string; icon: IconName }> = [
  { screen: 'sync', label: 'Sync', icon: 'sync' },
  { screen: 'patients', label: 'Patients', icon: 'patients' },
  { screen: 'activity', label: 'Activity', icon: 'activity' },
  { screen: 'settings', label: 'Settings', icon: 'settings' },
];

export function Sidebar({ status, current, onNavigate }: { status: AppStatus; current: Screen; onNavigate: (screen: Screen) => void }) {
  return (
    <nav className="sidebar" aria-label="Main">
      <div className="brand">
        <span className="brand-mark">
          <Icon name="logo" size={22} />
        </span>
        <span className="brand-name">Patient Docs</span>
      </div>
      <ul className="nav-list">
        {ITEMS.map((item) => (
          <li key={item.screen}>
            <button type="button" className="nav-item" aria-current={item.screen === current ? 'page' : undefined} onClick={() => onNavigate(item.screen)}>
              <Icon name={item.icon} size={19} />
              {item.label}
            </button>
          </li>
        ))}
      </ul>
      <ConnectionSummary status={status} />
    </nav>
  );
}

function ConnectionSummary({ status }: { status: AppStatus }) {
  const organization = status.server?.organizationName ?? status.server?.organizationId ?? 'No server';
  const where = status.mode === 'embedded' ? 'Server on this computer' : (status.server?.url ?? '');
  return (
    <div className="connection-summary" role="status">
      <span className={status.online ? 'dot dot-online' : 'dot dot-offline'} aria-hidden="true" />
      <div>
        <div className="connection-organization">{organization}</div>
        <div className="connection-detail">{status.online ? where : 'Offline — will retry'}</div>
        {status.shell === 'headless' ? <div className="connection-detail">Browser mode · v{status.version}</div> : <div className="connection-detail">v{status.version}</div>}
      </div>
    </div>
  );
}
