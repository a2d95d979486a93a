import { useState } from 'react';
import type { PairView } from '../../../../shared/bridge.js';
import { visibleName } from '../../../../shared/names.js';
import { useBridge } from '../../bridge/context.js';
import { Icon } from '../../components/Icon.js';

/**
 * The first run's one next step: while the only folder is the demo one and nothing has been put in
 * it yet, say where to drop a scan, and that its patient is a demo on the server on this computer.
 */
export function Welcome({ pairs, demoPatientId }: { pairs: readonly PairView[]; demoPatientId: string | null }) {
  const client = useBridge();
  const [opened, setOpened] = useState(false);
  const demo = pairs.length === 1 && demoPatientId !== null && pairs[0]!.patientId === demoPatientId ? pairs[0]! : null;
  if (!demo) return null;
  const empty = Object.values(demo.counts).every((count) => count === 0) && demo.settling === 0 && demo.skipped === 0;
  if (!empty) return null;
  return (
    <section className="card welcome" aria-labelledby="welcome-title" data-testid="welcome">
      <h2 id="welcome-title">Welcome to Patient Docs</h2>
      <p className="welcome-step">
        <strong>Next step: drop a scan into this folder.</strong> It is uploaded and checked by itself.
      </p>
      <p className="welcome-folder mono break">{demo.folder}</p>
      <div className="welcome-actions">
        <button
          type="button"
          className="button primary"
          onClick={() => {
            void client.openFolder(demo.id).then(() => setOpened(true), () => setOpened(false));
          }}
        >
          <Icon name="folderOpen" size={16} /> Open this folder
        </button>
        {opened ? <span className="muted small">Opened in the file manager.</span> : null}
      </div>
      <p className="muted small">
        {visibleName(demo.patientName ?? 'Demo Patient')} is a demo patient on the server on this computer, to try the app with. When you are ready, add your scanner’s
        export folder with Add folder, or connect your clinic’s server in Settings.
      </p>
    </section>
  );
}
