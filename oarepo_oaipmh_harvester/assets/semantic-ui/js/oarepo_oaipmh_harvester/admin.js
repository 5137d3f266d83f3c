// The panel's own JavaScript for the harvester pages, loaded before invenio-administration's
// bundles so that the overrides are in the store when a page renders:
// - Run now, Re-harvest and Purge say that the run was queued and link it (invenio-administration
//   closes the form without a word);
// - Preview... on a harvester's page opens the preview page (a modal only shows success or
//   failure, a preview is a report to read);
// - the preview page itself: the run arguments form, posted to the harvester's links.preview,
//   and the report it answers. Everything shown goes through React, which escapes it: the
//   report holds what a provider sent (titles, error messages).
import React, { useEffect, useState } from "react";
import ReactDOM from "react-dom";
import PropTypes from "prop-types";
import { overrideStore } from "react-overridable";
import { Form, Formik } from "formik";
import { http } from "react-invenio-forms";
import {
  Button,
  Form as SemanticForm,
  Header,
  Label,
  List,
  Message,
  Modal,
  Table,
} from "semantic-ui-react";
import { ActionForm, GenerateForm } from "@js/invenio_administration";

const onDetailsPage = () => document.getElementById("invenio-details-config") !== null;

export const RunNowForm = ({ actionSuccessCallback, ...props }) => {
  const [run, setRun] = useState(null);
  if (run === null) {
    return <ActionForm {...props} actionSuccessCallback={(data) => setRun(data)} />;
  }
  const runLink = run?.links?.self_html;
  // A detail page draws a harvester's runs (a record's state) server-side: show it again,
  // with the new run, rather than going to the list as invenio-administration does.
  const close = () =>
    onDetailsPage() ? window.location.reload() : actionSuccessCallback(run);
  return (
    <>
      <Modal.Content>
        <Message positive id="oai-harvester-run-queued">
          <Message.Header>
            {run.status === "QUEUED" ? "The run is queued." : `The run is ${run.status}.`}
          </Message.Header>
          <p>
            {run.title || "Run now"}
            {runLink && (
              <>
                {" "}
                &middot; <a href={runLink}>Open the run</a>
              </>
            )}
          </p>
        </Message>
      </Modal.Content>
      <Modal.Actions>
        <Button primary onClick={close}>
          Close
        </Button>
      </Modal.Actions>
    </>
  );
};

RunNowForm.propTypes = {
  actionSuccessCallback: PropTypes.func.isRequired,
};

export const OpenPreviewPage = ({ actionConfig }) => {
  const page = actionConfig?.page;
  useEffect(() => {
    if (page) {
      window.location.assign(page);
    }
  }, [page]);
  return (
    <Modal.Content>
      <p>
        <a href={page}>Opening the preview…</a>
      </p>
    </Modal.Content>
  );
};

OpenPreviewPage.propTypes = {
  actionConfig: PropTypes.object.isRequired,
};

overrideStore.add("InvenioAdministration.ResourceActions.ModalBody.run", RunNowForm);
overrideStore.add("InvenioAdministration.ResourceActions.ModalBody.reharvest", RunNowForm);
overrideStore.add("InvenioAdministration.ResourceActions.ModalBody.purge", RunNowForm);
overrideStore.add("InvenioAdministration.ResourceActions.ModalBody.run_preview", OpenPreviewPage);

// -- the preview page ------------------------------------------------------------------------

const COUNTS = [
  ["examined", "Examined"],
  ["created", "Created"],
  ["updated", "Updated"],
  ["deleted", "Deleted"],
  ["unchanged", "Unchanged"],
  ["failed", "Failed"],
];

const ACTION_COLORS = { create: "green", update: "blue", delete: "orange", fail: "red" };

const MAX_VALUE_LENGTH = 500;

const shown = (value) => {
  const text = JSON.stringify(value);
  if (text === undefined) {
    return "";
  }
  return text.length > MAX_VALUE_LENGTH ? `${text.slice(0, MAX_VALUE_LENGTH)}…` : text;
};

const Changes = ({ changes }) => (
  <Table compact="very" basic="very" className="oai-preview-changes">
    <Table.Body>
      {changes.map((change, index) => (
        <Table.Row key={index} className="oai-preview-change">
          <Table.Cell collapsing>
            <code>{change.op}</code>
          </Table.Cell>
          <Table.Cell collapsing>
            <code>{change.path}</code>
          </Table.Cell>
          <Table.Cell>{"value" in change && <code>{shown(change.value)}</code>}</Table.Cell>
        </Table.Row>
      ))}
    </Table.Body>
  </Table>
);

Changes.propTypes = {
  changes: PropTypes.array.isRequired,
};

const Entries = ({ entries }) => (
  <Table compact celled id="oai-preview-entries">
    <Table.Header>
      <Table.Row>
        <Table.HeaderCell>OAI identifier</Table.HeaderCell>
        <Table.HeaderCell>Would</Table.HeaderCell>
        <Table.HeaderCell>Local record</Table.HeaderCell>
        <Table.HeaderCell>
          Changes of fields (op, path, value), errors, conflicts with local edits
        </Table.HeaderCell>
      </Table.Row>
    </Table.Header>
    <Table.Body>
      {entries.map((entry, index) => (
        <Table.Row
          key={index}
          className="oai-preview-entry"
          data-identifier={entry.identifier}
          negative={entry.action === "fail"}
        >
          <Table.Cell>
            <code>{entry.identifier}</code>
          </Table.Cell>
          <Table.Cell collapsing>
            <Label size="small" color={ACTION_COLORS[entry.action]}>
              {entry.action}
            </Label>
          </Table.Cell>
          <Table.Cell collapsing>{entry.pid || ""}</Table.Cell>
          <Table.Cell>
            {entry.changes && entry.changes.length > 0 && <Changes changes={entry.changes} />}
            {entry.changes && entry.changes.length === 0 && (
              <span className="text-muted">No field differs.</span>
            )}
            {entry.errors && entry.errors.length > 0 && (
              <List bulleted className="oai-preview-errors">
                {entry.errors.map((error, errorIndex) => (
                  <List.Item key={errorIndex}>{error}</List.Item>
                ))}
              </List>
            )}
            {entry.conflicts && entry.conflicts.length > 0 && (
              <List bulleted className="oai-preview-conflicts">
                {entry.conflicts.map((conflict, conflictIndex) => (
                  <List.Item key={conflictIndex}>
                    Conflict: <code>{conflict.field}</code> changed locally and at the source;{" "}
                    {conflict.policy} keeps the {conflict.kept} value
                  </List.Item>
                ))}
              </List>
            )}
            {entry.notices && entry.notices.length > 0 && (
              <List bulleted className="oai-preview-notices">
                {entry.notices.map((notice, noticeIndex) => (
                  <List.Item key={noticeIndex}>{notice}</List.Item>
                ))}
              </List>
            )}
          </Table.Cell>
        </Table.Row>
      ))}
    </Table.Body>
  </Table>
);

Entries.propTypes = {
  entries: PropTypes.array.isRequired,
};

export const PreviewReport = ({ report }) => {
  const counts = report.counts || {};
  const entries = report.entries || [];
  const notes = report.notes || [];
  const changed = ["created", "updated", "deleted", "failed"].reduce(
    (sum, name) => sum + (counts[name] || 0),
    0
  );
  const reconciliation = report.predicted_reconciliation;
  return (
    <div id="oai-preview-report" className="rel-mt-2">
      <Header as="h2">What a run would do</Header>
      {report.message && <p id="oai-preview-message">{report.message}</p>}
      <Table compact celled unstackable id="oai-preview-counts">
        <Table.Header>
          <Table.Row>
            {COUNTS.map(([name, label]) => (
              <Table.HeaderCell key={name}>{label}</Table.HeaderCell>
            ))}
          </Table.Row>
        </Table.Header>
        <Table.Body>
          <Table.Row>
            {COUNTS.map(([name]) => (
              <Table.Cell key={name} data-count={name}>
                {counts[name] || 0}
              </Table.Cell>
            ))}
          </Table.Row>
        </Table.Body>
      </Table>
      {report.stopped_early && (
        <Message warning id="oai-preview-stopped">
          <Message.Header>Stopped at the limit</Message.Header>
          <p>
            The preview examined {counts.examined} records (its limit is {report.limit}) and
            stopped; a run would go on. The counts cover only the records examined.
          </p>
        </Message>
      )}
      {reconciliation !== null && reconciliation !== undefined && (
        <Message info id="oai-preview-reconciliation">
          Reconciliation: after this window a run would delete {reconciliation} local
          {reconciliation === 1 ? " record" : " records"} that the provider no longer lists.
        </Message>
      )}
      {entries.length > 0 ? (
        <>
          <Header as="h3">
            {entries.length < changed
              ? `The first ${entries.length} of ${changed} records a run would change`
              : "Records a run would change"}
          </Header>
          <Entries entries={entries} />
        </>
      ) : (
        <p id="oai-preview-nothing">A run would change no record.</p>
      )}
      {notes.length > 0 && (
        <>
          <Header as="h3">Notes</Header>
          <List bulleted id="oai-preview-notes">
            {notes.map((note, index) => (
              <List.Item key={index}>{note}</List.Item>
            ))}
          </List>
        </>
      )}
      {report.requests !== undefined && (
        <p className="text-muted" id="oai-preview-requests">
          Requests to the provider: {report.requests}. Nothing was written.
        </p>
      )}
    </div>
  );
};

PreviewReport.propTypes = {
  report: PropTypes.object.isRequired,
};

const errorsByField = (errors) =>
  Object.fromEntries(
    (errors || [])
      .filter((error) => error.field && Array.isArray(error.messages))
      .map((error) => [error.field, error.messages.join(" ")])
  );

// The run arguments form of the preview page. Not invenio-administration's ActionForm: that
// keeps an error shown after a later success, and a report belongs beside the form.
export const PreviewForm = ({ harvester, formSchema, harvesterPage, onReport }) => {
  const [error, setError] = useState(null);
  const submit = async (values, { setErrors, setSubmitting }) => {
    setError(null);
    onReport(null);
    try {
      // The panel's HTTP client: the session's CSRF token, the Accept header of the panel.
      const response = await http.post(harvester.links.preview, values);
      onReport(response.data);
    } catch (failure) {
      const answer = failure?.response?.data;
      if (answer?.errors) {
        setErrors(errorsByField(answer.errors));
      }
      setError(answer?.message || failure.message);
    } finally {
      setSubmitting(false);
    }
  };
  return (
    <Formik initialValues={{}} onSubmit={submit}>
      {(formikProps) => (
        <SemanticForm as={Form} onSubmit={formikProps.handleSubmit}>
          <GenerateForm
            jsonSchema={formSchema}
            formFields={formSchema}
            create
            dropDumpOnly
            formikProps={formikProps}
            formData={{}}
          />
          {error && (
            <Message negative id="oai-preview-error">
              <Message.Header>The preview failed</Message.Header>
              <p>{error}</p>
            </Message>
          )}
          <Button
            type="submit"
            primary
            loading={formikProps.isSubmitting}
            disabled={formikProps.isSubmitting}
          >
            Preview
          </Button>
          <Button type="button" basic onClick={() => window.location.assign(harvesterPage)}>
            Back to the harvester
          </Button>
        </SemanticForm>
      )}
    </Formik>
  );
};

PreviewForm.propTypes = {
  harvester: PropTypes.object.isRequired,
  formSchema: PropTypes.object.isRequired,
  harvesterPage: PropTypes.string.isRequired,
  onReport: PropTypes.func.isRequired,
};

export const PreviewPage = (props) => {
  const [report, setReport] = useState(null);
  return (
    <>
      <div className="ui segment" id="oai-preview-form">
        <PreviewForm {...props} onReport={setReport} />
      </div>
      {report && <PreviewReport report={report} />}
    </>
  );
};

const previewRoot = document.getElementById("oai-harvester-preview");
if (previewRoot) {
  ReactDOM.render(
    <PreviewPage
      harvester={JSON.parse(previewRoot.dataset.harvester)}
      formSchema={JSON.parse(previewRoot.dataset.formSchema)}
      harvesterPage={JSON.parse(previewRoot.dataset.harvesterPage)}
    />,
    previewRoot
  );
}

// The banner of held deletions (the mass-deletion guard) on the harvester's page: apply them
// or keep the records, through the REST API, then the page again.
export const HeldDeletionsButtons = ({ confirmUrl, rejectUrl, held }) => {
  const [answer, setAnswer] = useState(null);
  const [busy, setBusy] = useState(false);
  const send = async (url, describe) => {
    setBusy(true);
    try {
      const response = await http.post(url);
      setAnswer({ positive: true, text: describe(response.data) });
      window.setTimeout(() => window.location.reload(), 1500);
    } catch (failure) {
      setAnswer({ positive: false, text: failure?.response?.data?.message || failure.message });
    } finally {
      setBusy(false);
    }
  };
  const confirm = () => {
    if (window.confirm(`Delete the ${held} local records whose deletion is held?`)) {
      send(confirmUrl, (data) => `Deleted ${data.deleted} records; ${data.failed} failed.`);
    }
  };
  const reject = () =>
    send(rejectUrl, (data) => `Dropped ${data.rejected} held deletions; the records stay.`);
  return (
    <>
      <Button negative id="oai-held-deletions-confirm" loading={busy} disabled={busy} onClick={confirm}>
        Delete them
      </Button>
      <Button id="oai-held-deletions-reject" disabled={busy} onClick={reject}>
        Keep the records
      </Button>
      {answer && (
        <Message positive={answer.positive} negative={!answer.positive} id="oai-held-deletions-answer">
          {answer.text}
        </Message>
      )}
    </>
  );
};

HeldDeletionsButtons.propTypes = {
  confirmUrl: PropTypes.string.isRequired,
  rejectUrl: PropTypes.string.isRequired,
  held: PropTypes.string.isRequired,
};

const heldRoot = document.getElementById("oai-harvester-held-deletions-buttons");
if (heldRoot) {
  ReactDOM.render(
    <HeldDeletionsButtons
      confirmUrl={heldRoot.dataset.confirmUrl}
      rejectUrl={heldRoot.dataset.rejectUrl}
      held={heldRoot.dataset.held}
    />,
    heldRoot
  );
}

// Undo of one run (in the harvester's table of runs): what it would do is asked first (a dry
// run), shown in the confirmation; then the undo run is started and the page shown again.
export const UndoRunButton = ({ undoUrl, title }) => {
  const [answer, setAnswer] = useState(null);
  const [busy, setBusy] = useState(false);
  const undo = async () => {
    setBusy(true);
    try {
      const planned = (await http.post(`${undoUrl}?dry_run=true`)).data;
      const counts = planned.counts;
      const question =
        `Undo "${title}"? It would delete ${counts.delete} records the run created, ` +
        `write back ${counts.revert} it updated and restore ${counts.restore} it deleted; ` +
        `${counts.left} changed since would be left alone.`;
      if (!window.confirm(question)) {
        return;
      }
      const run = (await http.post(undoUrl)).data;
      setAnswer({ positive: true, text: `Undo run ${run.status.toLowerCase()}.` });
      window.setTimeout(() => window.location.reload(), 1500);
    } catch (failure) {
      const errors = failure?.response?.data?.errors;
      const text = errors?.length
        ? errors.map((error) => error.messages.join(" ")).join(" ")
        : failure?.response?.data?.message || failure.message;
      setAnswer({ positive: false, text });
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <Button size="mini" className="oai-run-undo" loading={busy} disabled={busy} onClick={undo}>
        Undo
      </Button>
      {answer && (
        <Message size="mini" positive={answer.positive} negative={!answer.positive} className="oai-run-undo-answer">
          {answer.text}
        </Message>
      )}
    </>
  );
};

UndoRunButton.propTypes = {
  undoUrl: PropTypes.string.isRequired,
  title: PropTypes.string.isRequired,
};

for (const undoRoot of document.getElementsByClassName("oai-run-undo-button")) {
  ReactDOM.render(
    <UndoRunButton undoUrl={undoRoot.dataset.undoUrl} title={undoRoot.dataset.title} />,
    undoRoot
  );
}
