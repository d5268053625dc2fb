/* Rows' pass of validate (included by _scan.c after _scan_tally.c): ``validate``, validate._validate's loop over
 * view.message_groups, with _answered_turn (the common turn: one assistant entry whose calls the next message's
 * one-result entries answer in order) read here; every other message that needs a look is handed to the Python's
 * ``_check``. It reads the slots of ``FullEntry``s, ``Call``s and ``Result``s: a list with another entry in it, or a
 * field of an unexpected type where it reads one, is left to the Python whole (None, before anything is done). */

/* the fields this pass reads, of the types it reads them as: -1 on error */
static int validate_usual(Rows *self, PyObject *e) {
    if (!Py_IS_TYPE(e, self->full)) return 0;
    PyObject *role = SLOT(e, self->f_role), *stop = SLOT(e, self->f_stop), *calls = SLOT(e, self->f_calls);
    PyObject *results = SLOT(e, self->f_results), *x = SLOT(e, self->f_extra), *nb = SLOT(e, self->f_nblocks);
    PyObject *empty = SLOT(e, self->f_empty), *blank = SLOT(e, self->f_blank_text);
    if (!str_or_none(role) || !str_or_none(stop) || !calls || !PyTuple_CheckExact(calls) || !results
        || !PyTuple_CheckExact(results) || !x || (x != Py_None && !PyDict_CheckExact(x)) || !nb || !PyLong_CheckExact(nb)
        || (empty != Py_True && empty != Py_False) || (blank != Py_True && blank != Py_False)) return 0;
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(calls); j++) {
        PyObject *c = PyTuple_GET_ITEM(calls, j);
        if (!Py_IS_TYPE(c, self->call) || !SLOT(c, self->c_id) || !SLOT(c, self->c_problem)) return 0;
    }
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(results); j++) {
        PyObject *r = PyTuple_GET_ITEM(results, j);
        if (!Py_IS_TYPE(r, self->result_cls) || !SLOT(r, self->r_id)) return 0;
    }
    return 1;
}

/* message_groups over ``ctx``: a list of (role, entries) */
static PyObject *message_groups_of(Rows *self, PyObject *ctx, int merge, PyObject *unsent) {
    PyObject *groups = PyList_New(0), *group = NULL, *role = NULL;  /* (role: borrowed) */
    if (!groups) return NULL;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(ctx); k++) {
        PyObject *e = PyList_GET_ITEM(ctx, k), *r = SLOT(e, self->f_role);
        if (r != Py_None && same_str(r, self->assistant)) {
            int sent = sent_assistant(self, e, unsent);
            if (sent < 0) goto fail;
            if (!sent) continue;
            if (group && merge && role != Py_None && same_str(role, self->assistant)) {
                if (PyList_Append(group, e) < 0) goto fail;
                continue;
            }
        } else {
            r = r != Py_None ? self->user : Py_None;
            if (group && (role == r || (role != Py_None && r != Py_None && same_str(role, r)))) {
                if (PyList_Append(group, e) < 0) goto fail;
                continue;
            }
        }
        if (group) {
            PyObject *t = PyTuple_Pack(2, role, group);
            Py_CLEAR(group);
            if (!t || PyList_Append(groups, t) < 0) { Py_XDECREF(t); goto fail; }
            Py_DECREF(t);
        }
        role = r;
        group = PyList_New(1);
        if (!group) goto fail;
        PyList_SET_ITEM(group, 0, Py_NewRef(e));
    }
    if (group) {
        PyObject *t = PyTuple_Pack(2, role, group);
        Py_CLEAR(group);
        if (!t || PyList_Append(groups, t) < 0) { Py_XDECREF(t); goto fail; }
        Py_DECREF(t);
    }
    return groups;
fail:
    Py_XDECREF(group);
    Py_DECREF(groups);
    return NULL;
}

/* validate._answered_turn: 1 (the ids recorded in seen_calls as message n's), 0, -1 on error */
static int answered_turn(Rows *self, Py_ssize_t n, PyObject *cur, PyObject *nxt, PyObject *seen_calls) {
    PyObject *ents = PyList_GET_ITEM(cur, 1), *answers = PyList_GET_ITEM(nxt, 1);
    if (!same_str(PyList_GET_ITEM(cur, 0), self->assistant) || !same_str(PyList_GET_ITEM(nxt, 0), self->user)
        || PyList_GET_SIZE(ents) != 1) return 0;
    PyObject *e = PyList_GET_ITEM(ents, 0), *calls = SLOT(e, self->f_calls), *x = SLOT(e, self->f_extra);
    if (PyTuple_GET_SIZE(SLOT(e, self->f_results)) || SLOT(e, self->f_blank_text) == Py_True || !PyTuple_GET_SIZE(calls))
        return 0;
    if (x != Py_None) {
        int r = PyDict_Contains(x, self->bad_blocks);
        if (r) return r < 0 ? -1 : 0;
    }
    Py_ssize_t nc = PyTuple_GET_SIZE(calls);
    int bad = call_problem_in(self, calls);  /* every call valid (no problem) */
    if (bad) return bad < 0 ? -1 : 0;
    if (PyList_GET_SIZE(answers) != nc) return 0;
    for (Py_ssize_t k = 0; k < nc; k++) {
        PyObject *a = PyList_GET_ITEM(answers, k), *rs = SLOT(a, self->f_results);
        int overflow;
        if (PyTuple_GET_SIZE(rs) != 1 || PyLong_AsLongAndOverflow(SLOT(a, self->f_nblocks), &overflow) != 1 || overflow
            || PyTuple_GET_SIZE(SLOT(a, self->f_calls)) || SLOT(a, self->f_blank_text) == Py_True) return 0;
        int ne = PyObject_RichCompareBool(SLOT(PyTuple_GET_ITEM(rs, 0), self->r_id),
                                          SLOT(PyTuple_GET_ITEM(calls, k), self->c_id), Py_NE);
        if (ne) return ne < 0 ? -1 : 0;
    }
    if (nc > 1) {  /* distinct ids */
        PyObject *ids = PySet_New(NULL);
        if (!ids) return -1;
        for (Py_ssize_t j = 0; j < nc; j++) {
            if (PySet_Add(ids, SLOT(PyTuple_GET_ITEM(calls, j), self->c_id)) < 0) { Py_DECREF(ids); return -1; }
        }
        Py_ssize_t distinct = PySet_GET_SIZE(ids);
        Py_DECREF(ids);
        if (distinct != nc) return 0;
    }
    for (Py_ssize_t j = 0; j < nc; j++) {  /* none seen before */
        int r = PyDict_Contains(seen_calls, SLOT(PyTuple_GET_ITEM(calls, j), self->c_id));
        if (r) return r < 0 ? -1 : 0;
    }
    PyObject *no = PyLong_FromSsize_t(n);
    if (!no) return -1;
    for (Py_ssize_t j = 0; j < nc; j++) {
        if (PyDict_SetItem(seen_calls, SLOT(PyTuple_GET_ITEM(calls, j), self->c_id), no) < 0) { Py_DECREF(no); return -1; }
    }
    Py_DECREF(no);
    return 1;
}

/* validate(ctx, merge, unsent, plain, plain_no_blocks, seen_calls, check) -> (n, prev, cur), or None: _validate's loop
 * over message_groups(ctx) (``merge``: consecutive sent assistant entries make one message; ``unsent``: the stop
 * reasons of assistant turns that are not sent). Each message is the list [role, entries, summary, verified] that
 * _validate makes, its summary ``plain`` or ``plain_no_blocks`` for a lone entry with nothing to check, else None.
 * A message that needs a look once the next is known is handed to ``check(n, prev, cur, nxt)`` (``_check``); one
 * whose calls the next answers in order is checked here (``answered_turn``). Returns the last message's number and
 * the last two messages (None when there are fewer), for _validate's end. */
static PyObject *Rows_validate(Rows *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7 || !PyList_Check(args[0]) || !PyTuple_Check(args[2]) || !PyDict_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "validate(ctx: list, merge, unsent: tuple, plain, plain_no_blocks, seen_calls: dict, check)");
        return NULL;
    }
    if (!tally_ready(self)) return NULL;
    PyObject *ctx = args[0], *unsent = args[2], *plain = args[3], *plain_nb = args[4], *seen = args[5], *check = args[6];
    int merge = PyObject_IsTrue(args[1]);
    if (merge < 0) return NULL;
    if (!strs_only(unsent)) Py_RETURN_NONE;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(ctx); k++) {
        int u = validate_usual(self, PyList_GET_ITEM(ctx, k));
        if (u <= 0) {
            if (u < 0) return NULL;
            Py_RETURN_NONE;
        }
    }
    PyObject *groups = message_groups_of(self, ctx, merge, unsent);
    if (!groups) return NULL;
    PyObject *prev = Py_NewRef(Py_None), *cur = Py_NewRef(Py_None);
    Py_ssize_t n = -1;
    for (Py_ssize_t g = 0; g < PyList_GET_SIZE(groups); g++) {
        PyObject *t = PyList_GET_ITEM(groups, g), *ents = PyTuple_GET_ITEM(t, 1);
        PyObject *sm = Py_None;
        if (PyList_GET_SIZE(ents) == 1) {
            PyObject *e = PyList_GET_ITEM(ents, 0), *x = SLOT(e, self->f_extra);
            int bad = 0;
            if (x != Py_None) {
                bad = PyDict_Contains(x, self->bad_blocks);
                if (bad < 0) goto fail;
            }
            if (!PyTuple_GET_SIZE(SLOT(e, self->f_calls)) && !PyTuple_GET_SIZE(SLOT(e, self->f_results))
                && SLOT(e, self->f_empty) != Py_True && SLOT(e, self->f_blank_text) != Py_True && !bad) {
                int nb = PyObject_IsTrue(SLOT(e, self->f_nblocks));
                if (nb < 0) goto fail;
                sm = nb ? plain : plain_nb;
            }
        }
        PyObject *nxt = PyList_New(4);
        if (!nxt) goto fail;
        PyList_SET_ITEM(nxt, 0, Py_NewRef(PyTuple_GET_ITEM(t, 0)));
        PyList_SET_ITEM(nxt, 1, Py_NewRef(ents));
        PyList_SET_ITEM(nxt, 2, Py_NewRef(sm));
        PyList_SET_ITEM(nxt, 3, Py_NewRef(Py_False));
        if (cur != Py_None && PyList_GET_ITEM(cur, 3) != Py_True && PyList_GET_ITEM(cur, 2) != plain) {
            int a = answered_turn(self, n, cur, nxt, seen);
            if (a < 0) { Py_DECREF(nxt); goto fail; }
            if (a) {
                PyList_SetItem(nxt, 3, Py_NewRef(Py_True));
            } else {
                PyObject *no = PyLong_FromSsize_t(n);
                PyObject *r = no ? PyObject_CallFunctionObjArgs(check, no, prev, cur, nxt, NULL) : NULL;
                Py_XDECREF(no);
                if (!r) { Py_DECREF(nxt); goto fail; }
                Py_DECREF(r);
            }
        }
        Py_SETREF(prev, cur);
        cur = nxt;
        n++;
    }
    Py_DECREF(groups);
    return Py_BuildValue("nNN", n, prev, cur);
fail:
    Py_DECREF(groups);
    Py_DECREF(prev);
    Py_DECREF(cur);
    return NULL;
}
