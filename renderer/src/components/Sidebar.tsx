import type { AppStatus } from '../../../shared/bridge.js';
import { Icon, type IconName } from './Icon.js';

export type Screen = 'sync' | 'inbox' | 'patients' | 'activity' | 'settings';

const ITEMS: Array<{ screen: Screen; label: string; icon: IconName }> = [
  { screen: 'sync', label: 'Sync', icon: 'sync' },
  { screen: 'inbox', label: 'Inbox', icon: 'folderOpen' },
  { screen: 'patients', label: 'Patients', icon: 'patients' },
  { screen: 'activity', label: 'Activity', icon: 'activity' },
  { screen: 'settings', label: 'Settings', icon: 'settings' },
];

export function Sidebar({ status, current, onNavigate, attention = 0 }: { status: AppStatus; current: Screen; onNavigate: (screen: Screen) => void; /** Folders that need someone: a badge on Sync. */ attention?: number }) {
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
            <button
              type="button"
              className="nav-item"
              aria-current={item.screen === current ? 'page' : undefined}
              aria-describedby={item.screen === 'sync' && attention > 0 ? 'nav-sync-attention' : undefined}
              onClick={() => onNavigate(item.screen)}
            >
              <Icon name={item.icon} size={19} />
              {item.label}
              {item.screen === 'sync' && attention > 0 ? (
                <span className="nav-badge" aria-hidden="true" data-testid="sync-attention-badge">
                  {attention}
                </span>
              ) : null}
            </button>
          </li>
        ))}
      </ul>
      {attention > 0 ? (
        <span id="nav-sync-attention" className="visually-hidden">
          {attention === 1 ? 'One folder needs attention' : `${attention} folders need attention`}
        </span>
      ) : null}
      <ConnectionSummary status={status} />
    </nav>
  );
}

function ConnectionSummary({ status }: { status: AppStatus }) {
  const server = status.server;
  // The organization by name once the server has told it (GET /v1/organizations/{id}); until then, or
  // from a server without that route, a short id with the whole one on hover.
  const organization = server?.organizationName ?? (server ? 'Clinic server' : 'No server');
  const where = status.mode === 'embedded' ? 'Server on this computer' : server ? hostOf(server.url) : '';
  return (
    <div className="connection-summary" role="status">
      <span className={status.online ? 'dot dot-online' : 'dot dot-offline'} aria-hidden="true" />
      <div className="connection-text">
        <div className="connection-organization">{organization}</div>
        <div className="connection-detail truncate" title={server?.url}>
          {status.online ? where : status.secrets.clientSecretMissing ? 'Client secret missing — enter it in Settings' : 'Offline — will retry'}
        </div>
        {server && !server.organizationName ? (
          <div className="connection-detail truncate" title={`Organization ${server.organizationId}`}>
            Organization {server.organizationId.slice(0, 8)}…
          </div>
        ) : null}
        <div className="connection-detail">{status.shell === 'headless' ? `Browser mode · v${status.version}` : `v${status.version}`}</div>
      </div>
    </div>
  );
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}
