import type { FileError } from '../../../shared/bridge.js';
import type { ReactNode } from 'react';
import { Icon } from './Icon.js';

/** A failure in plain language first, the server's own words underneath for IT. */
export function ErrorNotice({ error, title, action }: { error: Pick<FileError, 'message' | 'detail'>; title?: string; action?: ReactNode }) {
  return (
    <div className="notice notice-danger" role="alert">
      <Icon name="alert" size={18} />
      <div className="notice-body">
        {title ? <strong>{title}</strong> : null}
        <p className="notice-message">{error.message}</p>
        {error.detail ? (
          <p className="notice-detail">
            <span className="notice-detail-label">Server said:</span> {error.detail}
          </p>
        ) : null}
      </div>
      {action ? <div className="notice-action">{action}</div> : null}
    </div>
  );
}

export function InfoNotice({ children, tone = 'info' }: { children: ReactNode; tone?: 'info' | 'warning' | 'success' }) {
  return (
    <div className={`notice notice-${tone}`} role="status">
      <Icon name={tone === 'success' ? 'checkCircle' : tone === 'warning' ? 'alert' : 'info'} size={18} />
      <div className="notice-body">{children}</div>
    </div>
  );
}
