import { useEffect, useRef, useState } from 'react';
import { Box3, Color, DirectionalLight, Group, HemisphereLight, Mesh, MeshStandardMaterial, PerspectiveCamera, Scene, Sphere, Vector3, WebGLRenderer } from 'three';
import { OrbitControls } from 'three/examples/jsm/controls/OrbitControls.js';
import type { ModelType } from '../documents/file-types.js';
import { formatCount } from '../format.js';
import { parseModel } from './load-model.js';

/** How much one press of + or − brings the model closer or moves it away. */
const ZOOM_STEP = 1.15;

type ViewerState = { phase: 'loading' } | { phase: 'ready'; triangles: number } | { phase: 'failed'; message: string };

/**
 * STL/PLY/OBJ viewer: drag (or Shift+arrow keys) to turn, scroll (or + and −) to zoom, right-drag or
 * arrow keys to pan, so the keyboard alone can look at a scan. Renders only when the view changes.
 */
export default function ModelViewer({ url, fileType, fileName }: { url: string; fileType: ModelType; fileName: string }) {
  const containerRef = useRef<HTMLDivElement>(null);
  const resetRef = useRef<() => void>(() => undefined);
  const [state, setState] = useState<ViewerState>({ phase: 'loading' });

  useEffect(() => {
    const container = containerRef.current;
    if (!container) return;
    let disposed = false;
    let cleanup = (): void => undefined;
    setState({ phase: 'loading' });
    fetch(url)
      .then((response) => {
        if (!response.ok) throw new Error(response.status === 403 ? 'The download link has expired. Close and open the viewer again.' : `The server answered ${response.status}.`);
        return response.arrayBuffer();
      })
      .then((bytes) => {
        if (disposed) return;
        const model = parseModel(bytes, fileType);
        const scene = createScene(container, model.geometries);
        cleanup = scene.dispose;
        resetRef.current = scene.reset;
        setState({ phase: 'ready', triangles: model.triangles });
        // The keys (turn, zoom, move) work at once: the model has the focus when the viewer opens.
        container.focus();
      })
      .catch((error: unknown) => {
        if (!disposed) setState({ phase: 'failed', message: describeFailure(error) });
      });
    return () => {
      disposed = true;
      cleanup();
    };
  }, [url, fileType]);

  return (
    <div className="model-viewer">
      <div ref={containerRef} className="model-canvas" role="img" aria-label={`3D view of ${fileName}`} aria-describedby={state.phase === 'ready' ? 'model-viewer-keys' : undefined} data-viewer-state={state.phase} tabIndex={0} />
      {state.phase === 'loading' ? (
        <div className="model-overlay" role="status">
          <span className="spinner" aria-hidden="true" /> Loading the 3D model…
        </div>
      ) : null}
      {state.phase === 'failed' ? (
        <div className="model-overlay model-overlay-error" role="alert">
          {state.message}
        </div>
      ) : null}
      {state.phase === 'ready' ? (
        <div className="model-footer">
          <span className="muted small" id="model-viewer-keys">
            {formatCount(state.triangles)} triangles · drag or Shift+arrow keys to turn, scroll or + and − to zoom, right-drag or arrow keys to move
          </span>
          <button type="button" className="button small" onClick={() => resetRef.current()}>
            Reset view
          </button>
        </div>
      ) : null}
    </div>
  );
}

function describeFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (/webgl|context/i.test(message)) return 'This computer cannot show 3D models (graphics acceleration is off). Download the file to open it in your CAD software.';
  if (error instanceof TypeError) return 'The file could not be fetched from the server. Check the connection and try again.';
  return `The model cannot be shown: ${message}`;
}

function createScene(container: HTMLDivElement, geometries: ReturnType<typeof parseModel>['geometries']): { dispose: () => void; reset: () => void } {
  const renderer = new WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
  renderer.setPixelRatio(Math.min(window.devicePixelRatio, 2));
  renderer.setSize(container.clientWidth, container.clientHeight);
  container.append(renderer.domElement);

  const scene = new Scene();
  scene.background = new Color('#eef2f4');
  const material = new MeshStandardMaterial({ color: '#e8dccb', roughness: 0.55, metalness: 0.05 });
  const model = new Group();
  for (const geometry of geometries) model.add(new Mesh(geometry, material));
  scene.add(model);

  // Centre the scan at the origin so orbiting turns it about its own middle.
  const bounds = new Box3().setFromObject(model);
  const sphere = bounds.getBoundingSphere(new Sphere());
  model.position.sub(sphere.center);

  const camera = new PerspectiveCamera(35, container.clientWidth / Math.max(1, container.clientHeight), sphere.radius / 100, sphere.radius * 100);
  // Scanners export the arch lying in the XY plane with teeth along +Z.
  camera.up.set(0, 0, 1);
  scene.add(new HemisphereLight('#ffffff', '#8a99a6', 1.6));
  const keyLight = new DirectionalLight('#ffffff', 1.8);
  keyLight.position.set(1, 1.5, 2);
  camera.add(keyLight);
  scene.add(camera);

  const controls = new OrbitControls(camera, renderer.domElement);
  controls.listenToKeyEvents(container);
  // OrbitControls pans and turns with the arrow keys but has no zoom key: + and − do what the wheel does.
  const onZoomKey = (event: KeyboardEvent): void => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    // three's dolly takes the factor the distance is multiplied by (in) or divided by (out): below 1 brings the model closer.
    if (event.key === '+' || event.key === '=') controls.dollyIn(1 / ZOOM_STEP);
    else if (event.key === '-' || event.key === '−') controls.dollyOut(1 / ZOOM_STEP);
    else return;
    event.preventDefault();
  };
  container.addEventListener('keydown', onZoomKey);
  const render = (): void => {
    renderer.render(scene, camera);
    // How far the camera is from the model, for whoever checks what a key did (the tests).
    container.dataset.cameraDistance = camera.position.distanceTo(controls.target).toFixed(3);
  };
  const reset = (): void => {
    const distance = sphere.radius / Math.sin((camera.fov * Math.PI) / 360);
    camera.position.copy(new Vector3(0.35, -0.9, 0.75).normalize().multiplyScalar(distance * 1.05));
    controls.target.set(0, 0, 0);
    controls.update();
    render();
  };
  controls.addEventListener('change', render);
  reset();

  const observer = new ResizeObserver(() => {
    if (container.clientWidth === 0) return;
    camera.aspect = container.clientWidth / container.clientHeight;
    camera.updateProjectionMatrix();
    renderer.setSize(container.clientWidth, container.clientHeight);
    render();
  });
  observer.observe(container);

  return {
    reset,
    dispose: () => {
      observer.disconnect();
      container.removeEventListener('keydown', onZoomKey);
      controls.dispose();
      material.dispose();
      geometries.forEach((geometry) => geometry.dispose());
      renderer.dispose();
      renderer.domElement.remove();
    },
  };
}
