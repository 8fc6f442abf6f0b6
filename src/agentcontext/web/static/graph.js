// Draws the graph in #graph from the JSON in #graph-data with vis-network (positions come from the server's
// layered layout, so no physics runs). Click a node to open it, click an edge to open its target.
// window.consoleGraph is the vis Network (tests use it to find where a node is drawn);
// window.__graphRendered is performance.now() when the first frame was drawn.
(function () {
  var box = document.getElementById('graph');
  var dataTag = document.getElementById('graph-data');
  if (!box || !dataTag || typeof vis === 'undefined') return;
  var data = JSON.parse(dataTag.textContent);
  var byId = {};
  var nodes = data.nodes.map(function (n) {
    byId[n.id] = n;
    var node = {id: n.id, label: n.label, title: n.id + ' (' + n.kind + ')', x: n.x, y: n.y,
                shape: 'box', margin: 6, color: {background: '#eef3fb', border: '#6b87b8'}, font: {size: 14}};
    if (n.shape) {  // the explorer: a dot sized by PageRank, coloured by community, its label below
      node.shape = n.shape; node.size = n.size; node.margin = undefined;
      node.color = {background: n.color, border: n.focus ? '#222' : n.color};
      node.borderWidth = n.focus ? 3 : 1; node.title = n.id + ' (' + n.kind + ')';
      return node;
    }
    if (n.focus) node.color = {background: '#fff4c2', border: '#b38f00'};
    if (n.cycle) { node.color = {background: '#fde2e2', border: '#c0392b'}; node.borderWidth = 3; }
    if (n.missing) { node.color = {background: '#f4f4f4', border: '#999'}; node.shapeProperties = {borderDashes: [5, 4]};
                     node.label = n.label + ' (missing)'; }
    return node;
  });
  var edges = data.edges.map(function (e, i) {
    var dep = data.explore ? e.holds : (e.type === 'depends_on' || e.type === 'caused');
    var a = byId[e.from], b = byId[e.to];
    var skips = !data.explore && a && b && Math.abs(a.y - b.y) > 200;  // spans rows: bend it so it does not hide behind others
    return {id: 'e' + i, from: e.from, to: e.to, title: e.type, arrows: 'to',
            color: {color: dep ? '#2f5fb3' : '#a0a0a0'}, width: dep ? 2 : 1, dashes: !dep,
            label: data.edges.length <= 60 && !dep ? e.type : undefined, font: {size: 11, color: '#777'},
            smooth: skips ? {enabled: true, type: 'curvedCW', roundness: 0.35} : false};
  });
  var big = nodes.length > 400;
  // Labels by zoom level: a label whose drawn font would be under 7px is not drawn (a 2,000-node view shows
  // its shape first, the names as one zooms in).
  var network = new vis.Network(box, {nodes: nodes, edges: edges}, {
    physics: false, layout: {improvedLayout: false},
    edges: {smooth: false, selectionWidth: 2},
    nodes: {shape: 'box', scaling: {label: {enabled: false, drawThreshold: 7}}},
    interaction: {hover: !big, tooltipDelay: 150, hideEdgesOnDrag: big, hideEdgesOnZoom: big,
                  navigationButtons: false, keyboard: true}
  });
  function open(id) { var n = byId[id]; if (n && n.url) window.location.assign(n.url); }
  network.on('click', function (params) {
    if (params.nodes.length) { open(params.nodes[0]); return; }
    if (params.edges.length) { var e = network.body.data.edges.get(params.edges[0]); if (e) open(e.to); }
  });
  if (big && data.explore) network.fit({animation: false});
  network.once('afterDrawing', function () {
    window.__graphRendered = performance.now();
    if (performance.mark) performance.mark('graph-rendered');
    box.setAttribute('data-rendered', 'true');
  });
  window.consoleGraph = network;
})();
