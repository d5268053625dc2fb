/* ctxtool._scan, included by _scan.c before the formats' parts (_scan_codex.c, _scan_claude.c, _scan_pi.c): what they
 * share to read a parsed line and make its entry. ``CF`` holds the facts normalize gives an entry beyond its type, id,
 * parent and time; ``facts_entry`` makes the entry of them (a FullEntry, or model.entry_to_tuple's tuple of it, as
 * model.full_entry, normalize, share_strings and release leave it), with the classes a ``Maker`` names. */

#define MAX_COUNT_ ((INT64_C(1) << 53) - 1)

/* d[key] (borrowed), NULL when missing; an error cannot happen with str keys and is treated as missing */
static inline PyObject *get(PyObject *d, PyObject *key) {
    PyObject *v = PyDict_GetItemWithError(d, key);
    if (!v && PyErr_Occurred()) PyErr_Clear();
    return v;
}

/* ``v == s`` for an exact str v and an ASCII s */
static inline int is(PyObject *v, const char *s) {
    if (!v || !PyUnicode_CheckExact(v) || !PyUnicode_IS_COMPACT_ASCII(v)) return 0;
    Py_ssize_t n = (Py_ssize_t)strlen(s);
    return PyUnicode_GET_LENGTH(v) == n && memcmp(PyUnicode_DATA(v), s, n) == 0;
}

/* the concatenation of n exact strs, made at once (PyUnicode_FromFormat costs ~1,500 instructions a call): a new
 * reference, or NULL with an error set */
static PyObject *joined(PyObject *const *parts, int n) {
    Py_ssize_t len = 0;
    Py_UCS4 max = 0;
    for (int k = 0; k < n; k++) {
        len += PyUnicode_GET_LENGTH(parts[k]);
        Py_UCS4 m = PyUnicode_MAX_CHAR_VALUE(parts[k]);
        if (m > max) max = m;
    }
    PyObject *s = PyUnicode_New(len, max);
    if (!s) return NULL;
    Py_ssize_t at = 0;
    for (int k = 0; k < n; k++) {
        Py_ssize_t m = PyUnicode_GET_LENGTH(parts[k]);
        if (max < 128) {
            memcpy(PyUnicode_1BYTE_DATA(s) + at, PyUnicode_1BYTE_DATA(parts[k]), (size_t)m);
        } else if (PyUnicode_CopyCharacters(s, at, parts[k], 0, m) < 0) {
            Py_DECREF(s);
            return NULL;
        }
        at += m;
    }
    return s;
}

#define IS_STR(v) ((v) && PyUnicode_CheckExact(v))
#define NULLISH(v) (!(v) || (v) == Py_None)
#define OPT_STR(v) (NULLISH(v) || PyUnicode_CheckExact(v))

/* model.js_len: the length in UTF-16 code units */
static Py_ssize_t js_len_(PyObject *s) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (PyUnicode_KIND(s) != PyUnicode_4BYTE_KIND) return n;
    const Py_UCS4 *d = PyUnicode_4BYTE_DATA(s);
    Py_ssize_t extra = 0;
    for (Py_ssize_t i = 0; i < n; i++) extra += d[i] > 0xFFFF;
    return n + extra;
}

/* formats.common.count on an int: 1 and *out for 0..MAX_COUNT, 0 (decline) for any other number (absurd:
 * Python notes it); *out = 0 for anything that is no number (a missing field too) */
static int count_(PyObject *v, long long *out) {
    *out = 0;
    if (!v) return 1;
    if (PyFloat_CheckExact(v)) return 0;
    if (!PyLong_CheckExact(v)) return 1;
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || x < 0 || x > MAX_COUNT_) {
        if (x == -1 && PyErr_Occurred()) PyErr_Clear();
        return 0;
    }
    *out = x;
    return 1;
}

/* a shared string: the table's object for this value (the value itself without a table). A Codex rollout puts only
 * the strings that repeat across lines through it (types, roles, tool names, models): an item's id is its line's own,
 * and a call id is met twice (its call's and its output's lines); putting the ~130K of them of a 500 MB rollout in the
 * table cost the scan ~0.15 s (the table outgrows the caches) for ~3 MB. pi and Claude Code share ids too: a parent
 * is its parent's id there. */
static PyObject *share(PyObject *shared, PyObject *s) {
    if (shared == Py_None) return Py_NewRef(s);
    PyObject *v = PyDict_SetDefault(shared, s, s);
    return v ? Py_NewRef(v) : NULL;
}

/* an object of a slotted class, its slots (offsets ``off``) set to ``vals`` */
static PyObject *slotted(PyTypeObject *cls, const Py_ssize_t *off, int n, PyObject *const *vals) {
    PyObject *o = cls->tp_alloc(cls, 0);
    if (!o) return NULL;
    for (int k = 0; k < n; k++) *(PyObject **)((char *)o + off[k]) = Py_NewRef(vals[k]);
    return o;
}

/* What normalize gives a line's entry beyond its type, id, parent and time (scan_anthropic_blocks' counts among them) */
typedef struct {
    PyObject *kind;                           /* borrowed: model.MESSAGE or META */
    PyObject *role, *stop, *msg_key, *model;  /* new references, or NULL (None); role, stop and model shared */
    PyObject *extra;                          /* a new dict, or NULL (None) */
    PyObject *calls, *results;                /* lists of (idx, id, name, problem, chars) tuples, or NULL */
    Py_ssize_t nblocks;
    long long chars, k[5];                    /* Kinds' text, thinking, tool_call, tool_result, image */
    int empty, blank, signed_, has_usage, placeholder;
    long long usage[5];                       /* input, output, cache read, cache write, total */
    int kinds_always;                         /* a Kinds even when every count is 0 (pi's tool results) */
    PyObject *tool_chars;                     /* a new dict, or NULL (model.EMPTY) */
} CF;

static void cf_clear(CF *f) {
    Py_CLEAR(f->tool_chars);
    Py_CLEAR(f->role);
    Py_CLEAR(f->stop);
    Py_CLEAR(f->msg_key);
    Py_CLEAR(f->model);
    Py_CLEAR(f->extra);
    Py_CLEAR(f->calls);
    Py_CLEAR(f->results);
}

/* a call or a result: (idx, id, name, problem, chars) appended to *list (made on first use) */
static int add_item(PyObject **list, Py_ssize_t i, PyObject *id, PyObject *name, PyObject *problem, long long chars) {
    if (!*list && !(*list = PyList_New(0))) return -1;
    PyObject *idx = PyLong_FromSsize_t(i), *n = idx ? PyLong_FromLongLong(chars) : NULL;
    PyObject *t = n ? PyTuple_Pack(5, idx, id, name, problem, n) : NULL;
    Py_XDECREF(idx);
    Py_XDECREF(n);
    if (!t) return -1;
    int r = PyList_Append(*list, t);
    Py_DECREF(t);
    return r;
}

/* the tuple of ``v`` (a helper's part sends these), or an object of the slotted class ``cls`` holding them */
static PyObject *tuple_or_slotted(int tuples, PyTypeObject *cls, const Py_ssize_t *off, int n, PyObject *const *v) {
    if (!tuples) return slotted(cls, off, n, v);
    PyObject *t = PyTuple_New(n);
    if (t)
        for (int k = 0; k < n; k++) PyTuple_SET_ITEM(t, k, Py_NewRef(v[k]));
    return t;
}

/* what an entry is made of: model's classes and their slots' offsets, and the values entries share (the Meta of a
 * Claude Code file and the Whole of a pi session each have their own) */
typedef struct {
    int tuples;                 /* model.entry_to_tuple's tuples, not objects (a helper's part) */
    PyTypeObject *full, *kinds, *call, *result, *usage;
    const Py_ssize_t *foff, *koff, *coff, *roff, *uoff;
    PyObject *eol, *zero, *empty;  /* b"\n", 0, model.EMPTY */
} Maker;

/* the entry of a line (a FullEntry, or model.entry_to_tuple's tuple of it with ``tuples``): ``f`` and the line's own
 * fields, as model.full_entry, normalize, share_strings and release leave it */
static PyObject *facts_entry(const Maker *mk, CF *f, PyObject *index, PyObject *no, PyObject *start, PyObject *size,
                             PyObject *ty, PyObject *uuid, PyObject *parent, PyObject *ts) {
    PyObject *nblocks = NULL, *chars = NULL, *kinds = NULL, *calls = NULL, *results = NULL, *usage = NULL, *out = NULL;
    PyObject *empty_tuple = PyTuple_New(0);  /* the () singleton */
    int tuples = mk->tuples;
    if (!empty_tuple || !(nblocks = PyLong_FromSsize_t(f->nblocks)) || !(chars = PyLong_FromLongLong(f->chars))) goto done;
    if (f->kinds_always || f->k[0] || f->k[1] || f->k[2] || f->k[3] || f->k[4]) {
        PyObject *v[6] = {NULL, NULL, NULL, NULL, NULL, mk->zero};
        int ok = 1;
        for (int k = 0; k < 5; k++) ok = ok && (v[k] = PyLong_FromLongLong(f->k[k]));
        if (ok) kinds = tuple_or_slotted(tuples, mk->kinds, mk->koff, 6, v);
        for (int k = 0; k < 5; k++) Py_XDECREF(v[k]);
        if (!kinds) goto done;
    }
    for (int r = 0; r < 2; r++) {  /* the calls, then the results: their tuples, or objects of their class */
        PyObject *list = r ? f->results : f->calls;
        if (!list) continue;
        PyObject *t = PyList_AsTuple(list);
        if (!t) goto done;
        if (!tuples) {
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(t); j++) {
                PyObject *item = PyTuple_GET_ITEM(t, j);
                PyObject *o = slotted(r ? mk->result : mk->call, r ? mk->roff : mk->coff, 5, &PyTuple_GET_ITEM(item, 0));
                if (!o) { Py_DECREF(t); goto done; }
                PyTuple_SET_ITEM(t, j, o);
                Py_DECREF(item);
            }
        }
        if (r) results = t;
        else calls = t;
    }
    if (f->has_usage) {
        PyObject *v[6] = {NULL, NULL, NULL, NULL, NULL, f->placeholder ? Py_True : Py_False};
        int ok = 1;
        for (int k = 0; k < 5; k++) ok = ok && (v[k] = PyLong_FromLongLong(f->usage[k]));
        if (ok) usage = tuple_or_slotted(tuples, mk->usage, mk->uoff, 6, v);
        for (int k = 0; k < 5; k++) Py_XDECREF(v[k]);
        if (!usage) goto done;
    }
    {
        PyObject *none = Py_None;
        PyObject *role = f->role ? f->role : none, *stop = f->stop ? f->stop : none, *key = f->msg_key ? f->msg_key : none;
        PyObject *model = f->model ? f->model : none, *extra = f->extra ? f->extra : none;
        PyObject *tool_chars = f->tool_chars ? f->tool_chars : none;
        PyObject *empty = f->empty ? Py_True : Py_False, *blank = f->blank ? Py_True : Py_False;
        PyObject *sig = f->signed_ ? Py_True : Py_False;
        if (tuples) {
            PyObject *v[25] = {index, no, start, size, mk->eol, f->kind, ty, uuid, parent, role, stop, key, ts, model,
                               calls ? calls : none, results ? results : none, nblocks, empty, blank, sig, chars,
                               kinds ? kinds : none, tool_chars, usage ? usage : none, extra};
            out = PyTuple_New(25);
            if (out)
                for (int k = 0; k < 25; k++) PyTuple_SET_ITEM(out, k, Py_NewRef(v[k]));
        } else {
            PyObject *v[NFULL];
            v[F_INDEX] = index; v[F_LINENO] = no; v[F_OFFSET] = start; v[F_LENGTH] = size; v[F_EOL] = mk->eol;
            v[F_KIND] = f->kind; v[F_TYPE] = ty; v[F_ID] = uuid; v[F_PARENT] = parent; v[F_ROLE] = role; v[F_TS] = ts;
            v[F_OBJ] = v[F_BLOCKS] = v[F_M] = none;
            v[F_STOP] = stop; v[F_MSG_KEY] = key; v[F_MODEL] = model; v[F_USAGE] = usage ? usage : none;
            v[F_CALLS] = calls ? calls : empty_tuple; v[F_RESULTS] = results ? results : empty_tuple;
            v[F_NBLOCKS] = nblocks; v[F_EMPTY] = empty; v[F_BLANK] = blank; v[F_SIGNED] = sig;
            v[F_CHARS] = chars; v[F_KINDS] = kinds ? kinds : mk->empty;
            v[F_TOOL_CHARS] = f->tool_chars ? f->tool_chars : mk->empty;
            v[F_EXTRA] = extra;
            out = slotted(mk->full, mk->foff, NFULL, v);
        }
    }
done:
    Py_XDECREF(empty_tuple);
    Py_XDECREF(nblocks);
    Py_XDECREF(chars);
    Py_XDECREF(kinds);
    Py_XDECREF(calls);
    Py_XDECREF(results);
    Py_XDECREF(usage);
    return out;
}
