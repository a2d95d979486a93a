import type { FileError } from '../../../shared/bridge.js';
import type { ReactNode } from 'react';
import { detailLabel } from '../bridge/errors.js';
import { Icon } from './Icon.js';

/** A failure in plain language first, the detail underneath for IT ("Server said:" only for the server's own words). */
export function ErrorNotice({ error, title, action, children }: { error: Pick<FileError, 'message' | 'detail'> & { code?: FileError['code'] }; title?: string; action?: ReactNode; children?: ReactNode }) {
  const label = error.detail ? detailLabel(error) : null;
  return (
    <div className="notice notice-danger" role="alert">
      <Icon name="alert" size={18} />
      <div className="notice-body">
        {title ? <strong>{title}</strong> : null}
        {error.message ? <p className="notice-message">{error.message}</p> : null}
        {children}
        {label ? (
          <p className="notice-detail">
            <span className="notice-detail-label">{label}</span> {error.detail}
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
