// The panel's own JavaScript for the harvester pages, loaded before invenio-administration's
// bundles so that the overrides are in the store when a page renders:
// - Run now, Re-harvest and Purge say that the run was queued and link it (invenio-administration
//   closes the form without a word).
import React, { useState } from "react";
import PropTypes from "prop-types";
import { overrideStore } from "react-overridable";
import { Button, Message, Modal } from "semantic-ui-react";
import { ActionForm } from "@js/invenio_administration";

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

overrideStore.add("InvenioAdministration.ResourceActions.ModalBody.run", RunNowForm);
overrideStore.add("InvenioAdministration.ResourceActions.ModalBody.reharvest", RunNowForm);
overrideStore.add("InvenioAdministration.ResourceActions.ModalBody.purge", RunNowForm);
