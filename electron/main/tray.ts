/** The tray icon: sync status at a glance, and the few things staff do without opening the window. */
import { Menu, Tray, app, nativeImage } from 'electron';
import type { PairView } from '../../shared/bridge.js';
import { traySummary } from './notices.js';

export interface TrayActions {
  show(): void;
  setAllPaused(paused: boolean): void;
  quit(): void;
}

export class StatusTray {
  private readonly tray: Tray;
  private pairs: readonly PairView[] = [];
  private online = true;

  constructor(
    iconPath: string,
    private readonly actions: TrayActions,
  ) {
    const image = nativeImage.createFromPath(iconPath);
    this.tray = new Tray(image.isEmpty() ? image : image.resize({ width: 18, height: 18 }));
    this.tray.on('click', () => actions.show());
    this.render();
  }

  update(pairs: readonly PairView[], online = this.online): void {
    this.pairs = pairs;
    this.online = online;
    this.render();
  }

  destroy(): void {
    this.tray.destroy();
  }

  private render(): void {
    const summary = traySummary(this.pairs, this.online);
    const allPaused = this.pairs.length > 0 && this.pairs.every((pair) => pair.paused);
    this.tray.setToolTip(`Patient Docs — ${summary}`);
    this.tray.setContextMenu(
      Menu.buildFromTemplate([
        { label: summary, enabled: false },
        { type: 'separator' },
        { label: 'Open Patient Docs', click: () => this.actions.show() },
        allPaused
          ? { label: 'Resume syncing', click: () => this.actions.setAllPaused(false) }
          : { label: 'Pause syncing', enabled: this.pairs.length > 0, click: () => this.actions.setAllPaused(true) },
        {
          label: 'Start at login',
          type: 'checkbox',
          checked: app.getLoginItemSettings().openAtLogin,
          click: (item) => app.setLoginItemSettings({ openAtLogin: item.checked, openAsHidden: true }),
        },
        { type: 'separator' },
        { label: 'Quit Patient Docs', click: () => this.actions.quit() },
      ]),
    );
  }
}
