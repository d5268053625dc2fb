/* Rows' pass of repair's tool pairing (included by _scan.c after _scan_validate.c): ``pair``, Pairing.pair's loop
 * over the messages the model sees, turn by turn, with Pairing._pair_simple_turn read here (the common turn: one
 * assistant whose calls the next messages answer in order, a single result each, nothing else holding results),
 * reused call ids renamed as _final_call_id renames them. A turn this is not sure of goes to the Python's
 * ``_pair_turn`` whole, with nothing done to it here; a message with results outside a turn to ``_drop_unmatched``.
 * So each change is made by the same rule as in the Python, in the same order. */

typedef struct {
    PyObject *seen, *skipped, *dropped, *live_calls, *live_results, *edits, *changes, *counter;  /* the planner's */
    PyObject *turn, *unmatched;  /* its bound _pair_turn and _drop_unmatched */
    PyObject *change_cls, *sep;
    PyObject *words[4];  /* the details' words (WORDS) */
    Py_ssize_t ch[5];  /* the slots of change_cls: kind, action, line, id, detail */
    int pi;
} Pairing;

static const char *WORDS[4] = {"tool call id ", " was already used earlier in the request; renamed ", "result renamed ",
                                " with its tool call"};

/* the fields the grouping reads, of the types it reads them as: a FullEntry, role and stop a str or None, empty a
 * bool, calls a tuple of Calls whose ids are a str or None, results a tuple, an int index, a line number. 0: the
 * Python takes it from the turn it is in */
static int pair_usual(Rows *self, PyObject *e) {
    if (!Py_IS_TYPE(e, self->full)) return 0;
    PyObject *calls = SLOT(e, self->f_calls), *results = SLOT(e, self->f_results), *empty = SLOT(e, self->f_empty);
    if (!str_or_none(SLOT(e, self->f_role)) || !str_or_none(SLOT(e, self->f_stop)) || !calls || !PyTuple_CheckExact(calls)
        || !results || !PyTuple_CheckExact(results) || (empty != Py_True && empty != Py_False)
        || !SLOT(e, self->f_index) || !PyLong_CheckExact(SLOT(e, self->f_index)) || !SLOT(e, self->f_lineno))
        return 0;
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(calls); j++) {
        PyObject *c = PyTuple_GET_ITEM(calls, j);
        if (!Py_IS_TYPE(c, self->call) || !str_or_none(SLOT(c, self->c_id))) return 0;
    }
    return 1;
}

static inline int is_assistant(Rows *self, PyObject *e) {
    PyObject *r = SLOT(e, self->f_role);
    return r != Py_None && same_str(r, self->assistant);
}

/* view.sendable of an assistant entry */
static inline int sent_turn(Rows *self, PyObject *e, PyObject *unsent) {
    return SLOT(e, self->f_empty) != Py_True && !unsent_stop(SLOT(e, self->f_stop), unsent);
}

/* skipped.update(c.id for c in e.calls if c.id): 0, or -1 on error */
static int skip_calls(Rows *self, PyObject *e, PyObject *skipped) {
    PyObject *calls = SLOT(e, self->f_calls);
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(calls); j++) {
        PyObject *id = SLOT(PyTuple_GET_ITEM(calls, j), self->c_id);
        if (id != Py_None && PyUnicode_GET_LENGTH(id) && PySet_Add(skipped, id) < 0) return -1;
    }
    return 0;
}

/* key in the set or dict ``c``: 1, 0, or -1 on error */
static inline int in(PyObject *c, PyObject *key) {
    return PyDict_CheckExact(c) ? PyDict_Contains(c, key) : PySet_Contains(c, key);
}

/* Planner.change(kind, "rewritten", e, ident, detail) for kind "reused-id" (``detail`` taken): 0, or -1 */
static int pair_change(Rows *self, Pairing *st, PyObject *e, PyObject *ident, PyObject *detail) {
    if (!detail) return -1;
    PyObject *lineno = SLOT(e, self->f_lineno);
    int t = lineno ? PyObject_IsTrue(lineno) : 0;
    if (t < 0) { Py_DECREF(detail); return -1; }
    PyTypeObject *cls = (PyTypeObject *)st->change_cls;
    PyObject *c = cls->tp_alloc(cls, 0);  /* a dataclass with slots and nothing in __init__ but the fields */
    if (!c) { Py_DECREF(detail); return -1; }
    PyObject *v[5] = {self->reused_id, self->rewritten, t ? lineno : Py_None, ident, detail};
    for (int k = 0; k < 4; k++) SLOT(c, st->ch[k]) = Py_NewRef(v[k]);
    SLOT(c, st->ch[4]) = detail;
    int r = PyList_Append(st->changes, c);
    Py_DECREF(c);
    return r;
}

/* Planner.edit(e).setdefault(key, {})[idx] = value: 0, or -1 */
static int pair_edit(Rows *self, Pairing *st, PyObject *e, PyObject *key, PyObject *idx, PyObject *value) {
    PyObject *fresh = PyDict_New();
    if (!fresh) return -1;
    PyObject *ed = PyDict_SetDefault(st->edits, SLOT(e, self->f_index), fresh);  /* (borrowed) */
    Py_DECREF(fresh);
    if (!ed) return -1;
    if (!PyDict_Check(ed)) {
        PyErr_SetString(PyExc_TypeError, "an edit is no dict");
        return -1;
    }
    fresh = PyDict_New();
    if (!fresh) return -1;
    PyObject *names = PyDict_SetDefault(ed, key, fresh);
    Py_DECREF(fresh);
    if (!names) return -1;
    return PyObject_SetItem(names, idx, value);
}

/* _final_call_id(u, c, seen_calls): a new reference to the id call ``c`` is sent with (its own, or renamed, the
 * rename and its change recorded), added to seen_calls; NULL on error */
static PyObject *final_call_id(Rows *self, Pairing *st, PyObject *u, PyObject *c) {
    PyObject *id = SLOT(c, self->c_id), *fid = NULL;
    int r = PySet_Contains(st->seen, id);
    if (r < 0) return NULL;
    if (!r) {
        fid = Py_NewRef(id);
    } else {
        PyObject *had = PyDict_GetItemWithError(st->counter, id);
        if (!had && PyErr_Occurred()) return NULL;
        Py_ssize_t n = had ? PyLong_AsSsize_t(had) : 1;
        if (n == -1 && PyErr_Occurred()) return NULL;
        for (n++;; n++) {
            char digits[24], *d = digits + sizeof digits;
            for (size_t v = (size_t)n; d == digits + sizeof digits || v; v /= 10) *--d = (char)('0' + v % 10);
            PyObject *no = PyUnicode_New(digits + sizeof digits - d, 127);
            if (no) memcpy(PyUnicode_1BYTE_DATA(no), d, (size_t)(digits + sizeof digits - d));
            PyObject *parts[3] = {id, st->sep, no};
            fid = no ? joined(parts, 3) : NULL;
            Py_XDECREF(no);
            if (!fid) return NULL;
            r = PySet_Contains(st->seen, fid);
            if (!r) break;
            Py_DECREF(fid);
            if (r < 0) return NULL;
        }
        PyObject *no = PyLong_FromSsize_t(n);
        if (!no || PyDict_SetItem(st->counter, id, no) < 0
            || pair_edit(self, st, u, self->rename_calls, SLOT(c, self->c_idx), fid) < 0
            || pair_change(self, st, u, id, joined((PyObject *[]){st->words[0], id, st->words[1], fid}, 4)) < 0) {
            Py_XDECREF(no);
            Py_DECREF(fid);
            return NULL;
        }
        Py_DECREF(no);
    }
    if (PySet_Add(st->seen, fid) < 0) {
        Py_DECREF(fid);
        return NULL;
    }
    return fid;
}

/* whether call id ``id`` (a str) is one of the first k calls' ids */
static int id_among(Rows *self, PyObject *calls, Py_ssize_t k, PyObject *id) {
    for (Py_ssize_t j = 0; j < k; j++) {
        PyObject *other = SLOT(PyTuple_GET_ITEM(calls, j), self->c_id);
        if (same_str(other, id)) return 1;
    }
    return 0;
}

/* _pair_simple_turn(u, span, seen_calls), when it is sure the Python would settle the turn: 1 (settled, as the
 * Python settles it), 0 (nothing done: the Python's _pair_turn takes the turn), -1 on error */
static int simple_turn(Rows *self, Pairing *st, PyObject *u, PyObject *span) {
    PyObject *calls = SLOT(u, self->f_calls);
    Py_ssize_t nc = PyTuple_GET_SIZE(calls), ns = PyList_GET_SIZE(span);
    if (!nc || ns < nc || nc > 64) return 0;
    int r = in(st->live_calls, SLOT(u, self->f_index));  /* (a line with calls or results dropped: the Python's) */
    if (r) return r < 0 ? -1 : 0;
    for (Py_ssize_t k = 0; k < ns; k++) {
        PyObject *s = PyList_GET_ITEM(span, k), *si = SLOT(s, self->f_index), *rs = SLOT(s, self->f_results);
        if (!Py_IS_TYPE(s, self->full) || !si || !rs || !PyTuple_CheckExact(rs)) return 0;
        if ((r = in(st->live_results, si))) return r < 0 ? -1 : 0;
        if (k >= nc) {  /* no other results, but in dropped lines */
            if (PyTuple_GET_SIZE(rs)) {
                r = in(st->dropped, si);
                if (r <= 0) return r;
            }
            continue;
        }
        PyObject *c = PyTuple_GET_ITEM(calls, k), *cid = SLOT(c, self->c_id), *nb = SLOT(s, self->f_nblocks);
        int overflow;
        if (!PyUnicode_CheckExact(cid) || !SLOT(c, self->c_idx) || PyTuple_GET_SIZE(rs) != 1 || !nb
            || !PyLong_CheckExact(nb) || PyLong_AsLongAndOverflow(nb, &overflow) != 1 || overflow) return 0;
        if ((r = in(st->dropped, si))) return r < 0 ? -1 : 0;
        PyObject *res = PyTuple_GET_ITEM(rs, 0);
        if (!Py_IS_TYPE(res, self->result_cls)) return 0;  /* (before its slots are read) */
        PyObject *rid = SLOT(res, self->r_id), *name = SLOT(res, self->r_name);
        if (!rid || !PyUnicode_CheckExact(rid) || !SLOT(res, self->r_idx)
            || !same_str(rid, cid) || id_among(self, calls, k, cid)) return 0;
        PyObject *had = PyDict_GetItemWithError(st->counter, cid);  /* a rename's count: an int of at least 1 */
        if (!had && PyErr_Occurred()) return -1;
        if (had && (!PyLong_CheckExact(had) || PyLong_AsLongAndOverflow(had, &overflow) < 1 || overflow)) return 0;
        if (st->pi && (!name || !PyUnicode_CheckExact(name) || !PyUnicode_GET_LENGTH(name) || all_space(name))) return 0;
    }
    int fresh = 1;  /* ids.isdisjoint(seen_calls) */
    for (Py_ssize_t k = 0; k < nc && fresh; k++) {
        if ((r = PySet_Contains(st->seen, SLOT(PyTuple_GET_ITEM(calls, k), self->c_id))) < 0) return -1;
        fresh = !r;
    }
    if (fresh) {
        for (Py_ssize_t k = 0; k < nc; k++)
            if (PySet_Add(st->seen, SLOT(PyTuple_GET_ITEM(calls, k), self->c_id)) < 0) return -1;
        return 1;
    }
    PyObject *final[64];
    Py_ssize_t made = 0;
    for (; made < nc; made++) {
        final[made] = final_call_id(self, st, u, PyTuple_GET_ITEM(calls, made));
        if (!final[made]) goto fail;
    }
    for (Py_ssize_t k = 0; k < nc; k++) {
        if (final[k] == SLOT(PyTuple_GET_ITEM(calls, k), self->c_id)) continue;  /* (a rename is a new str, never equal) */
        PyObject *s = PyList_GET_ITEM(span, k), *res = PyTuple_GET_ITEM(SLOT(s, self->f_results), 0);
        if (pair_edit(self, st, s, self->rename_results, SLOT(res, self->r_idx), final[k]) < 0
            || pair_change(self, st, s, SLOT(res, self->r_id),
                           joined((PyObject *[]){st->words[2], final[k], st->words[3]}, 3)) < 0) goto fail;
    }
    for (Py_ssize_t k = 0; k < nc; k++) Py_DECREF(final[k]);
    return 1;
fail:
    for (Py_ssize_t k = 0; k < made; k++) Py_DECREF(final[k]);
    return -1;
}

/* _pair_turn's start, for a turn without calls: each message of ``span`` that holds results (or had some) goes to
 * _drop_unmatched. 1 (done), 0 (the turn has calls, or had some: nothing done), -1 on error */
static int no_calls(Rows *self, Pairing *st, PyObject *unit, PyObject *span) {
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(unit); k++) {
        PyObject *u = PyList_GET_ITEM(unit, k);
        if (PyTuple_GET_SIZE(SLOT(u, self->f_calls))) return 0;
        int r = in(st->live_calls, SLOT(u, self->f_index));
        if (r) return r < 0 ? -1 : 0;
    }
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(span); k++) {
        PyObject *s = PyList_GET_ITEM(span, k);
        int r = PyTuple_GET_SIZE(SLOT(s, self->f_results)) ? 1 : in(st->live_results, SLOT(s, self->f_index));
        if (r < 0) return -1;
        if (r) {
            PyObject *x = PyObject_CallFunctionObjArgs(st->unmatched, s, st->skipped, NULL);
            if (!x) return -1;
            Py_DECREF(x);
        }
    }
    return 1;
}

/* the planner's attribute ``name``, an exact set (or dict): a new reference, or NULL (an error set only when the
 * attribute is missing) */
static PyObject *planner_part(PyObject *planner, const char *name, int dict) {
    PyObject *v = PyObject_GetAttrString(planner, name);
    if (v && !(dict ? PyDict_CheckExact(v) : PySet_CheckExact(v))) Py_CLEAR(v);
    return v;
}

/* pair(planner, seq, merge, unsent, seen_calls, skipped, change_cls, pi, sep) -> i, or None (nothing done):
 * Pairing.pair's loop over ``seq`` (the messages of the segment) up to message i (len(seq): to its end), the planner's
 * state read and changed in place: its dropped, live_calls, live_results, edits, changes and rename_counter, and the
 * sets seen_calls and skipped; a turn the simple way cannot settle goes to its _pair_turn, results outside a turn to
 * its _drop_unmatched. ``merge``: consecutive sent assistant entries make one turn; ``unsent``: the stop reasons of
 * turns that are not sent (a tuple of str); ``change_cls``: repair.Change (with slots, made here); ``pi``: a result
 * needs a name; ``sep``: what a renamed id puts before its number. It stops at the turn (or message) that holds an
 * entry of another type than it reads (``pair_usual``), with nothing of that turn done (but ids added to skipped,
 * which the Python adds again): the Python's loop goes on from there. None when a part of the planner is not of the
 * type read here. */
static PyObject *Rows_pair(Rows *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 9 || !PyList_Check(args[1]) || !PyTuple_Check(args[3]) || !PyUnicode_Check(args[8])
        || !PyType_Check(args[6])) {
        PyErr_SetString(PyExc_TypeError,
                        "pair(planner, seq: list, merge, unsent: tuple, seen_calls, skipped, change_cls: type, pi, sep: str)");
        return NULL;
    }
    if (!tally_ready(self)) return NULL;
    PyObject *planner = args[0], *seq = args[1], *unsent = args[3];
    int merge = PyObject_IsTrue(args[2]), pi = PyObject_IsTrue(args[7]);
    if (merge < 0 || pi < 0) return NULL;
    if (!strs_only(unsent) || !PySet_CheckExact(args[4]) || !PySet_CheckExact(args[5])) Py_RETURN_NONE;
    Pairing st = {.seen = args[4], .skipped = args[5], .change_cls = args[6], .sep = args[8], .pi = pi};
    static const char *CHANGE[] = {"kind", "action", "line", "id", "detail"};
    if (slot_offsets(st.change_cls, CHANGE, 5, st.ch) < 0) {  /* a class without these slots: the Python makes them */
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    PyObject **own[] = {&st.dropped, &st.live_calls, &st.live_results, &st.edits, &st.counter, &st.changes, &st.turn,
                        &st.unmatched};
    static const char *names[] = {"dropped", "live_calls", "live_results", "edits", "rename_counter", "changes",
                                  "_pair_turn", "_drop_unmatched"};
    PyObject *out = NULL, *unit = NULL, *span = NULL;
    int ok = 1;
    if (intern_all(st.words, WORDS, 4) < 0) goto done;
    for (int k = 0; k < 8; k++) {
        *own[k] = k < 5 ? planner_part(planner, names[k], k > 0) : PyObject_GetAttrString(planner, names[k]);
        if (!*own[k]) {
            ok = 0;
            break;
        }
    }
    if (!ok || !PyList_CheckExact(st.changes)) {
        if (!PyErr_Occurred()) out = Py_NewRef(Py_None);
        goto done;
    }
    Py_ssize_t i = 0, n = PyList_GET_SIZE(seq);
    while (i < n) {
        PyObject *e = PyList_GET_ITEM(seq, i);
        if (!pair_usual(self, e)) break;
        if (!is_assistant(self, e)) {
            if (PyTuple_GET_SIZE(SLOT(e, self->f_results))) {
                PyObject *r = PyObject_CallFunctionObjArgs(st.unmatched, e, st.skipped, NULL);
                if (!r) goto done;
                Py_DECREF(r);
            }
            i++;
            continue;
        }
        if (!sent_turn(self, e, unsent)) {
            if (skip_calls(self, e, st.skipped) < 0) goto done;
            i++;
            continue;
        }
        unit = PyList_New(1);
        span = PyList_New(0);
        if (!unit || !span) goto done;
        PyList_SET_ITEM(unit, 0, Py_NewRef(e));
        Py_ssize_t j = i + 1;
        int odd = 0;
        for (; j < n; j++) {
            PyObject *x = PyList_GET_ITEM(seq, j);
            if ((odd = !pair_usual(self, x)) || !is_assistant(self, x)) break;
            if (!sent_turn(self, x, unsent)) {
                if (skip_calls(self, x, st.skipped) < 0) goto done;
            } else if (merge) {
                if (PyList_Append(unit, x) < 0) goto done;
            } else {
                break;
            }
        }
        for (; j < n && !odd; j++) {
            PyObject *x = PyList_GET_ITEM(seq, j);
            if ((odd = !pair_usual(self, x))) break;
            if (is_assistant(self, x)) {
                if (sent_turn(self, x, unsent)) break;
                if (skip_calls(self, x, st.skipped) < 0) goto done;
            } else if (PyList_Append(span, x) < 0) {
                goto done;
            }
        }
        if (odd) break;  /* this turn and the rest: the Python's */
        int r = no_calls(self, &st, unit, span);
        if (!r && PyList_GET_SIZE(unit) == 1) r = simple_turn(self, &st, e, span);
        if (r < 0) goto done;
        if (!r) {
            PyObject *t = PyObject_CallFunctionObjArgs(st.turn, unit, span, st.seen, st.skipped, NULL);
            if (!t) goto done;
            Py_DECREF(t);
        }
        Py_CLEAR(unit);
        Py_CLEAR(span);
        i = j;
    }
    out = PyLong_FromSsize_t(i);
done:
    Py_XDECREF(unit);
    Py_XDECREF(span);
    for (int k = 0; k < 8; k++) Py_XDECREF(*own[k]);
    for (int k = 0; k < 4; k++) Py_XDECREF(st.words[k]);
    return out;
}

/* ----------------------------------------------------------------------------------- repair's final entries */

/* a copy of ``o`` (an object of a class with slots only, exactly ``cls``) with the slot at ``off`` set to ``value``,
 * as Call.renamed and Result.renamed make it: a new reference, or NULL */
static PyObject *slots_copy(PyTypeObject *cls, PyObject *o, Py_ssize_t off, PyObject *value) {
    PyObject *c = cls->tp_alloc(cls, 0);
    if (!c) return NULL;
    for (PyMemberDef *m = cls->tp_members; m && m->name; m++)
        if (m->type == T_OBJECT_EX) SLOT(c, m->offset) = Py_XNewRef(m->offset == off ? value : SLOT(o, m->offset));
    return c;
}

/* ``renames`` (a dict by block index) applied to a tuple of ``cls`` objects: a new tuple, or NULL */
static PyObject *renamed_all(PyObject *items, PyObject *renames, PyTypeObject *cls, Py_ssize_t idx_off, Py_ssize_t id_off) {
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    PyObject *out = PyTuple_New(n);
    if (!out) return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *x = PyTuple_GET_ITEM(items, k);
        PyObject *to = PyDict_GetItemWithError(renames, SLOT(x, idx_off));
        if (!to && PyErr_Occurred()) { Py_DECREF(out); return NULL; }
        x = to ? slots_copy(cls, x, id_off, to) : Py_NewRef(x);
        if (!x) { Py_DECREF(out); return NULL; }
        PyTuple_SET_ITEM(out, k, x);
    }
    return out;
}

/* whether the renames of ``ed[key]`` can be made here: absent, empty, or a dict and ``items`` (the calls or results
 * of ``e``, a FullEntry) a tuple of ``cls`` objects with every slot set; -1 on error */
static int renames_usual(PyObject *ed, PyObject *key, PyObject *e, int full, Py_ssize_t items_off, PyTypeObject *cls,
                         PyObject **renames) {
    PyObject *r = PyDict_GetItemWithError(ed, key);
    *renames = NULL;
    if (!r) return PyErr_Occurred() ? -1 : 1;
    if (!PyDict_CheckExact(r)) return 0;
    if (!PyDict_GET_SIZE(r)) return 1;  /* ``if renames:`` */
    if (!full) return 0;  /* (an Entry has no such slot: before it is read) */
    PyObject *items = SLOT(e, items_off);
    if (!items || !PyTuple_CheckExact(items)) return 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(items); k++) {
        PyObject *x = PyTuple_GET_ITEM(items, k);
        if (!Py_IS_TYPE(x, cls)) return 0;
        for (PyMemberDef *m = cls->tp_members; m && m->name; m++)  /* every slot set, as renamed() reads them all */
            if (m->type == T_OBJECT_EX && !SLOT(x, m->offset)) return 0;
    }
    *renames = r;
    return 1;
}

/* finals(order, edits, slim) -> (final, todo), or None: plan_repair's loop that makes the final entries: an entry
 * of ``order`` with no edit is kept as it is; one whose edits (``edits[e.index]``) are all in ``slim`` (ids, links
 * and renamed calls and results: Rewriting.slim_final) is updated in place, its calls and results tuples made again
 * with the renamed ones copied; ``todo``: the positions in ``final`` of the entries left to the Python (a synthetic
 * line, other edits, or fields of other types than read here), which hold the entry of ``order`` for now. */
static PyObject *Rows_finals(Rows *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyList_Check(args[0]) || !PyDict_Check(args[1]) || !PyAnySet_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "finals(order: list, edits: dict, slim: set)");
        return NULL;
    }
    if (!tally_ready(self)) return NULL;
    PyObject *order = args[0], *edits = args[1], *slim = args[2];
    static const char *NAMES[4] = {"set_id", "set_parent", "rename_calls", "rename_results"};
    PyObject *keys[4] = {NULL}, *final = PyList_New(PyList_GET_SIZE(order)), *todo = PyList_New(0), *out = NULL;
    if (!final || !todo || intern_all(keys, NAMES, 4) < 0) goto done;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(order); k++) {
        PyObject *e = PyList_GET_ITEM(order, k);
        PyList_SET_ITEM(final, k, Py_NewRef(e));
        PyObject *idx = known(self, e) ? SLOT(e, self->f_index) : NULL;
        int overflow = 0;
        if (!idx || !PyLong_CheckExact(idx) || PyLong_AsLongLongAndOverflow(idx, &overflow) < 0 || overflow) goto python;
        PyObject *ed = PyDict_GetItemWithError(edits, idx);
        if (!ed) {
            if (PyErr_Occurred()) goto done;
            continue;  /* untouched: the index entry as scanned */
        }
        if (!PyDict_CheckExact(ed)) goto python;
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        while (PyDict_Next(ed, &pos, &key, &value)) {
            int in_slim = PySet_Contains(slim, key);
            if (in_slim < 0) goto done;
            if (!in_slim) goto python;
        }
        PyObject *calls, *results;
        int full = Py_IS_TYPE(e, self->full), u;
        if ((u = renames_usual(ed, keys[2], e, full, self->f_calls, self->call, &calls)) <= 0) {
            if (u < 0) goto done;
            goto python;
        }
        if ((u = renames_usual(ed, keys[3], e, full, self->f_results, self->result_cls, &results)) <= 0) {
            if (u < 0) goto done;
            goto python;
        }
        PyObject *id = PyDict_GetItemWithError(ed, keys[0]);
        if (!id && PyErr_Occurred()) goto done;
        PyObject *parent = PyDict_GetItemWithError(ed, keys[1]);
        if (!parent && PyErr_Occurred()) goto done;
        PyObject *nc = calls ? renamed_all(SLOT(e, self->f_calls), calls, self->call, self->c_idx, self->c_id) : NULL;
        PyObject *nr = results ? renamed_all(SLOT(e, self->f_results), results, self->result_cls, self->r_idx, self->r_id) : NULL;
        if ((calls && !nc) || (results && !nr)) { Py_XDECREF(nc); Py_XDECREF(nr); goto done; }
        if (id) Py_XSETREF(SLOT(e, self->e_id), Py_NewRef(id));
        if (parent) Py_XSETREF(SLOT(e, self->e_parent), Py_NewRef(parent));
        if (nc) Py_XSETREF(SLOT(e, self->f_calls), nc);
        if (nr) Py_XSETREF(SLOT(e, self->f_results), nr);
        continue;
    python:
        PyErr_Clear();  /* (an index too large for 64 bits) */
        PyObject *no = PyLong_FromSsize_t(k);
        if (!no || PyList_Append(todo, no) < 0) { Py_XDECREF(no); goto done; }
        Py_DECREF(no);
    }
    out = PyTuple_Pack(2, final, todo);
done:
    Py_XDECREF(final);
    Py_XDECREF(todo);
    for (int k = 0; k < 4; k++) Py_XDECREF(keys[k]);
    return out;
}
