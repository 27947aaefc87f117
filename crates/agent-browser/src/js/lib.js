const __om = (() => {
  const SELECTOR = [
    'a[href]', 'button', 'input', 'select', 'textarea', 'summary', 'details',
    '[role=button]', '[role=link]', '[role=checkbox]', '[role=radio]', '[role=tab]',
    '[role=menuitem]', '[role=option]', '[role=switch]', '[role=combobox]', '[role=textbox]',
    '[onclick]', '[contenteditable=""]', '[contenteditable=true]',
  ].join(',');
  const ATTRS = ['type', 'name', 'role', 'placeholder', 'aria-label', 'title', 'alt', 'href'];
  const visible = (el) => {
    const rect = el.getBoundingClientRect();
    if (rect.width <= 0 || rect.height <= 0) return false;
    if (typeof el.checkVisibility === 'function') {
      return el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true });
    }
    const style = el.ownerDocument.defaultView.getComputedStyle(el);
    return style.visibility !== 'hidden' && style.display !== 'none';
  };
  const interactive = (el) =>
    el.matches(SELECTOR) && !(el.tagName === 'INPUT' && el.type === 'hidden');
  const collect = () => {
    const out = [];
    const walk = (root) => {
      for (const el of root.querySelectorAll('*')) {
        if (interactive(el) && visible(el)) out.push(el);
        if (el.shadowRoot) walk(el.shadowRoot);
        if (el.tagName === 'IFRAME' || el.tagName === 'FRAME') {
          let doc = null;
          try { doc = el.contentDocument; } catch (e) { doc = null; }
          if (doc) walk(doc);
        }
      }
    };
    walk(document);
    return out;
  };
  const describe = (el, index) => {
    const attrs = {};
    for (const name of ATTRS) {
      const value = el.getAttribute(name);
      if (value !== null && value !== '') attrs[name] = value.slice(0, 100);
    }
    if ((el.tagName === 'INPUT' || el.tagName === 'TEXTAREA') && el.value) attrs.value = String(el.value).slice(0, 100);
    let text = '';
    if (el.tagName === 'SELECT') {
      const option = el.options[el.selectedIndex];
      text = option ? option.text : '';
    } else if (el.tagName !== 'INPUT' && el.tagName !== 'TEXTAREA') {
      text = (el.innerText || el.textContent || '');
    }
    text = text.replace(/\s+/g, ' ').trim().slice(0, 100);
    return { index, tag: el.tagName.toLowerCase(), attributes: attrs, text };
  };
  const index = () => {
    const elements = collect();
    window.__openmanusElements = elements;
    return elements.map(describe);
  };
  const element = (i) => {
    let list = window.__openmanusElements;
    if (!Array.isArray(list) || (list[i] && !list[i].isConnected)) {
      list = collect();
      window.__openmanusElements = list;
    }
    return list[i] || null;
  };
  const center = (el) => {
    el.scrollIntoView({ block: 'center', inline: 'center' });
    const rect = el.getBoundingClientRect();
    let x = rect.left + rect.width / 2;
    let y = rect.top + rect.height / 2;
    let view = el.ownerDocument.defaultView;
    while (view && view.frameElement) {
      const frame = view.frameElement;
      const frameRect = frame.getBoundingClientRect();
      x += frameRect.left + frame.clientLeft;
      y += frameRect.top + frame.clientTop;
      view = frame.ownerDocument.defaultView;
    }
    return { x, y };
  };
  const scroll = () => {
    const root = document.scrollingElement || document.documentElement;
    const total = Math.max(root.scrollHeight, document.body ? document.body.scrollHeight : 0);
    const above = Math.round(window.scrollY);
    return {
      pixels_above: above,
      pixels_below: Math.max(0, Math.round(total - window.scrollY - window.innerHeight)),
      total_height: Math.round(total),
      viewport_height: window.innerHeight,
    };
  };
  const findText = (needle) => {
    const wanted = needle.replace(/\s+/g, ' ').trim().toLowerCase();
    const walker = document.createTreeWalker(document.body || document.documentElement, NodeFilter.SHOW_ELEMENT);
    let best = null;
    for (let node = walker.currentNode; node; node = walker.nextNode()) {
      if (node.tagName === 'SCRIPT' || node.tagName === 'STYLE') continue;
      const text = (node.textContent || '').replace(/\s+/g, ' ').trim().toLowerCase();
      if (!text.includes(wanted) || !visible(node)) continue;
      if (best === null || best.contains(node)) best = node;
      else break;
    }
    return best;
  };
  return { index, element, center, scroll, findText };
})();
