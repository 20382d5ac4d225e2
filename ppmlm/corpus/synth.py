"""Deterministic synthetic clinical notes: the project's embedded default corpus.

Experiments (membership inference on models fine-tuned on it) need three things real notes have and a
synthetic corpus must copy: clinical language shared by many patients, details that only one patient's
notes contain and that recur across them (indirect identifiers), and direct identifiers whose exact
character spans are known (gold `phi`). Realism of that statistical structure matters more than prose.

Each patient is drawn independently from a random generator seeded with (seed, patient index) only, so
adding patients never changes earlier ones and any split of patients into members and non-members sees
the same distribution. Text is built by appending pieces and recording identifier offsets as it goes.

Identifiers are written the way real ICU notes write them, not only the tidy way: hospitals by acronyms
that every patient of the corpus's few local hospitals shares ("pt from CMH"), home towns from a small
local pool in capitals or lower case ("lives in WALTHAM", "home to brockton"), years as '92, nurses'
notes in lower case with lines in capitals, clinicians without titles and in lower case ("md jones
aware"), relatives by first name ("son JOHN called"), and signatures ("JS RN", "j smith rn"). `realism`
is the chance that a mention takes such a form. It also sets the share of names that no gazetteer holds
(built from syllables) or that are everyday words ("Rose", "Hall"): Faker's names alone are the very lists
the NER's name gazetteer is built from, and would overstate how well names are found in real notes.
"""
from __future__ import annotations

import datetime as dt
import json
import random
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Sequence

from faker import Faker

from ppmlm.identifiers.labels import AGE, DATE, EMAIL, HOSPITAL, ID, LOCATION, NAME, PHONE, URL
from ppmlm.resources import ner_model_folder

# A piece of a note: plain text, or (identifier text, PHI label).
Piece = str | tuple[str, str]

CARDIOLOGY = "cardiology"
RESPIRATORY = "respiratory"
NEUROLOGY = "neurology"
GASTROENTEROLOGY = "gastroenterology"
INFECTIOUS_DISEASE = "infectious disease"
CLASSES = (CARDIOLOGY, RESPIRATORY, NEUROLOGY, GASTROENTEROLOGY, INFECTIOUS_DISEASE)

MIN_NOTES, MAX_NOTES = 3, 12
NURSING_NOTE_SHARE = 0.5  # terse ICU nursing notes; the rest are physicians' prose notes
CAPS_LINE_SHARE = 0.15  # lines of a lower-case nursing note typed in capitals
# Chance that a mention is written as in real ICU notes rather than tidily: a hospital by its acronym, a year
# as '92, a clinician untitled in lower case, an informal signature, a nursing note in mixed case rather
# than all capitals. At 0.5 every form is common in the default corpus.
REALISM = 0.5
SAME_CLASS_SHARE = 0.75  # notes about the patient's main problem; the rest are intercurrent problems
# Notes with a second active problem of another class, described as fully as the principal one and listed
# after it: only the order tells the label, so keywords alone do not solve the classification task.
SECOND_PROBLEM_SHARE = 0.3
FACT_SHARE = 0.55  # chance that a note repeats a given personal detail: memorization needs repetition
LOCAL_TOWNS = 12  # the hospitals' catchment: most patients live in one of these towns
LOCAL_SHARE = 0.8  # patients from the local towns; the others come from anywhere
# Of the people's names (patients, relatives, clinicians), `realism` times these shares are invented from
# syllables (in no gazetteer of ner_models/) and names that are also common words ("Rose", "Hall", "Page");
# the rest are Faker's, the source of the name gazetteer. At the default realism: 20% and 10%.
INVENTED_NAME_SHARE = 0.4
WORD_NAME_SHARE = 0.2


def _words(text: str) -> tuple[str, ...]:
    """A vocabulary pool written as 'a | b | c', which keeps long lists compact."""
    return tuple(item.strip() for item in text.split("|") if item.strip())


@dataclass(frozen=True)
class _Lab:
    name: str
    low: float
    high: float
    decimals: int
    unit: str

    def draw(self, rng: random.Random) -> str:
        value = rng.uniform(self.low, self.high)
        number = f"{value:.{self.decimals}f}" if self.decimals else str(round(value))
        return f"{self.name} {number}{(' ' + self.unit) if self.unit else ''}"


@dataclass(frozen=True)
class _ClinicalClass:
    """Vocabulary of one note class, shared by every patient whose note is about it."""

    symptoms: tuple[str, ...]
    diagnoses: tuple[str, ...]
    findings: tuple[str, ...]
    studies: tuple[str, ...]
    labs: tuple[_Lab, ...]
    medications: tuple[str, ...]
    plans: tuple[str, ...]
    nursing: tuple[str, ...]  # terse observations of ICU nursing notes
    procedures: tuple[str, ...]


_CLASS_CONTENT = {
    CARDIOLOGY: _ClinicalClass(
        symptoms=_words(
            "substernal chest pressure | exertional chest pain radiating to the left arm | palpitations | "
            "dyspnea on exertion | orthopnea | paroxysmal nocturnal dyspnea | bilateral leg swelling | "
            "lightheadedness when standing | a near-syncopal episode | syncope while climbing stairs | "
            "fatigue with minimal exertion | jaw discomfort with exertion | a racing heartbeat | "
            "weight gain of several pounds over a week | diaphoresis and nausea with chest tightness"
        ),
        diagnoses=_words(
            "acute decompensated heart failure | non-ST elevation myocardial infarction | "
            "atrial fibrillation with rapid ventricular response | unstable angina | "
            "heart failure with reduced ejection fraction | hypertensive urgency | "
            "symptomatic bradycardia | severe aortic stenosis | ventricular tachycardia | "
            "hypertrophic cardiomyopathy | pericarditis | atrial flutter | stable angina"
        ),
        findings=_words(
            "jugular venous distension to the angle of the jaw | an irregularly irregular rhythm | "
            "a harsh crescendo-decrescendo systolic murmur at the right upper sternal border | "
            "an S3 gallop | 2+ pitting edema to the knees | bibasilar crackles | "
            "a regular rate and rhythm without murmurs | a pericardial friction rub | "
            "cool extremities with delayed capillary refill | diminished distal pulses | "
            "a displaced point of maximal impulse | hepatojugular reflux"
        ),
        studies=_words(
            "ECG showed sinus rhythm with lateral ST depressions | ECG showed atrial fibrillation | "
            "echocardiogram showed a reduced ejection fraction with global hypokinesis | "
            "echocardiogram showed moderate mitral regurgitation | chest x-ray showed cardiomegaly with "
            "pulmonary vascular congestion | telemetry showed runs of nonsustained ventricular tachycardia | "
            "stress test was positive for inducible ischemia | cardiac catheterization showed a "
            "proximal LAD stenosis | Holter monitor showed frequent premature ventricular contractions"
        ),
        labs=(
            _Lab("troponin", 0.01, 2.5, 2, "ng/mL"),
            _Lab("BNP", 90, 2400, 0, "pg/mL"),
            _Lab("potassium", 3.1, 5.4, 1, ""),
            _Lab("magnesium", 1.5, 2.4, 1, ""),
            _Lab("LDL", 60, 190, 0, "mg/dL"),
            _Lab("INR", 0.9, 3.4, 1, ""),
        ),
        medications=_words(
            "metoprolol succinate 50 mg daily | carvedilol 12.5 mg twice daily | furosemide 40 mg IV | "
            "lisinopril 10 mg daily | atorvastatin 80 mg nightly | aspirin 81 mg daily | "
            "clopidogrel 75 mg daily | apixaban 5 mg twice daily | amiodarone 200 mg daily | "
            "sacubitril-valsartan 24-26 mg twice daily | spironolactone 25 mg daily | diltiazem 30 mg every 6 hours | "
            "nitroglycerin 0.4 mg sublingual as needed | heparin drip per ACS protocol | digoxin 0.125 mg daily"
        ),
        plans=_words(
            "diurese with IV furosemide and track daily weights | strict intake and output | "
            "continue heparin drip and trend troponins | cardiology to evaluate for catheterization | "
            "rate control with metoprolol and anticoagulation with apixaban | repeat echocardiogram | "
            "low sodium diet with fluid restriction to 1.5 liters | titrate guideline-directed medical therapy | "
            "outpatient cardiac rehabilitation referral | event monitor for two weeks | "
            "hold lisinopril for rising creatinine | electrophysiology consult for ablation"
        ),
        nursing=_words(
            "tele sr 70s-80s w/ occ pvcs | tele afib 110s-130s | heparin gtt @ 18 units/kg/hr | "
            "lasix 40 iv given, good uop | trop trending down | +2 pitting edema bilat le | "
            "daily wt down 1.2 kg | denies cp | c/o palpitations | nitro gtt titrated for cp | "
            "radial site c/d/i, no hematoma | strict i&o"
        ),
        procedures=_words(
            "CABG | PCI with drug-eluting stent | pacemaker placement | AICD placement | "
            "TAVR | ablation for atrial flutter | cardioversion"
        ),
    ),
    RESPIRATORY: _ClinicalClass(
        symptoms=_words(
            "worsening shortness of breath | productive cough with green sputum | wheezing | "
            "pleuritic chest pain | hemoptysis | increased oxygen requirement at home | "
            "dyspnea at rest | chest tightness | a nonproductive cough for three weeks | "
            "inability to finish sentences | nocturnal cough | increased use of rescue inhaler | "
            "morning headaches and daytime somnolence"
        ),
        diagnoses=_words(
            "COPD exacerbation | community-acquired pneumonia | acute hypoxic respiratory failure | "
            "asthma exacerbation | pulmonary embolism | pleural effusion | "
            "acute on chronic hypercapnic respiratory failure | interstitial lung disease | "
            "spontaneous pneumothorax | obstructive sleep apnea | bronchiectasis flare | aspiration pneumonitis"
        ),
        findings=_words(
            "diffuse expiratory wheezes | prolonged expiratory phase | coarse rhonchi bilaterally | "
            "decreased breath sounds at the right base | dullness to percussion on the left | "
            "accessory muscle use | tachypnea with pursed-lip breathing | crackles in the left lower lobe | "
            "egophony over the right lower lobe | clear lungs bilaterally | digital clubbing | "
            "a barrel chest"
        ),
        studies=_words(
            "chest x-ray showed a right lower lobe consolidation | chest x-ray showed hyperinflation | "
            "CT angiogram showed a segmental pulmonary embolism | CT chest showed a moderate left pleural "
            "effusion | spirometry showed severe obstruction | arterial blood gas showed respiratory acidosis | "
            "CT chest showed bilateral ground-glass opacities | bronchoscopy showed purulent secretions | "
            "sleep study showed severe obstructive apnea"
        ),
        labs=(
            _Lab("pH", 7.21, 7.45, 2, ""),
            _Lab("pCO2", 35, 78, 0, "mmHg"),
            _Lab("pO2", 52, 98, 0, "mmHg"),
            _Lab("D-dimer", 0.2, 4.8, 1, ""),
            _Lab("bicarbonate", 20, 36, 0, ""),
            _Lab("eosinophils", 0, 9, 0, "%"),
        ),
        medications=_words(
            "albuterol nebulizer every 4 hours | ipratropium-albuterol nebulizer | prednisone 40 mg daily | "
            "methylprednisolone 40 mg IV every 8 hours | tiotropium inhaler daily | "
            "fluticasone-salmeterol 250/50 twice daily | azithromycin 500 mg daily | "
            "budesonide-formoterol inhaler | montelukast 10 mg nightly | guaifenesin 600 mg twice daily | "
            "enoxaparin 1 mg/kg twice daily | roflumilast 500 mcg daily"
        ),
        plans=_words(
            "wean oxygen to keep saturation 88 to 92 percent | BiPAP overnight | incentive spirometry | "
            "steroid taper over five days | nebulizers scheduled and as needed | pulmonary function tests as "
            "an outpatient | thoracentesis with pleural fluid studies | pulmonary rehabilitation referral | "
            "smoking cessation counseling | anticoagulation for pulmonary embolism | chest physiotherapy | "
            "repeat chest x-ray in six weeks"
        ),
        nursing=_words(
            "ls coarse bilat, diminished bases | exp wheezes t/o | sats 88-92% on 3l nc | bipap 12/5 overnight | "
            "neb tx given w/ some relief | c/o sob w/ exertion | ns'd for thick tan secretions | "
            "ct to -20 sxn, no air leak | is to 750 | o2 weaned to 2l nc | rr 20s, mild acc muscle use"
        ),
        procedures=_words(
            "lobectomy | pleurodesis | bronchoscopy with biopsy | tracheostomy | chest tube placement | "
            "lung volume reduction surgery"
        ),
    ),
    NEUROLOGY: _ClinicalClass(
        symptoms=_words(
            "sudden right-sided weakness | slurred speech | facial droop | the worst headache of life | "
            "a generalized tonic-clonic seizure | episodes of confusion | double vision | "
            "numbness and tingling in both feet | vertigo with nausea | difficulty finding words | "
            "a fall with brief loss of consciousness | tremor of the right hand | progressive memory loss | "
            "gait unsteadiness"
        ),
        diagnoses=_words(
            "acute ischemic stroke | transient ischemic attack | intracerebral hemorrhage | "
            "breakthrough seizure | status epilepticus | migraine without aura | "
            "subarachnoid hemorrhage | multiple sclerosis flare | Parkinson disease | "
            "peripheral neuropathy | Guillain-Barre syndrome | myasthenia gravis exacerbation | "
            "normal pressure hydrocephalus"
        ),
        findings=_words(
            "right pronator drift | left facial droop sparing the forehead | expressive aphasia | "
            "a left homonymous hemianopia | 4/5 strength in the right arm and leg | "
            "decreased sensation to pinprick in a stocking distribution | an upgoing right toe | "
            "a broad-based gait | cogwheel rigidity | dysmetria on finger-to-nose testing | "
            "nuchal rigidity | a nonfocal neurologic examination | horizontal nystagmus"
        ),
        studies=_words(
            "CT head showed no acute hemorrhage | MRI brain showed an acute left MCA territory infarct | "
            "CT angiogram showed an occlusion of the right M1 segment | EEG showed left temporal sharp waves | "
            "MRI spine showed enhancing demyelinating lesions | lumbar puncture showed xanthochromia | "
            "nerve conduction studies showed an axonal sensorimotor polyneuropathy | carotid duplex showed "
            "a 70 percent stenosis | continuous EEG captured no further seizures"
        ),
        labs=(
            _Lab("NIHSS", 0, 18, 0, ""),
            _Lab("levetiracetam level", 4, 38, 0, ""),
            _Lab("hemoglobin A1c", 5.2, 10.5, 1, "%"),
            _Lab("vitamin B12", 150, 900, 0, "pg/mL"),
            _Lab("glucose", 70, 260, 0, ""),
            _Lab("CSF protein", 20, 160, 0, "mg/dL"),
        ),
        medications=_words(
            "levetiracetam 500 mg twice daily | lacosamide 100 mg twice daily | alteplase per stroke protocol | "
            "aspirin 325 mg | clopidogrel 75 mg daily | carbidopa-levodopa 25/100 three times daily | "
            "sumatriptan 50 mg as needed | gabapentin 300 mg three times daily | topiramate 50 mg twice daily | "
            "lorazepam 2 mg IV for seizure | IVIG 0.4 g/kg daily | donepezil 10 mg nightly | nimodipine 60 mg"
        ),
        plans=_words(
            "neuro checks every 2 hours | permissive hypertension for 24 hours | MRI brain with and without "
            "contrast | EEG monitoring | seizure precautions | speech and swallow evaluation before oral intake | "
            "physical and occupational therapy | secondary stroke prevention with statin and antiplatelet | "
            "neurology follow-up in the movement disorders clinic | no driving until seizure-free for six months | "
            "headache diary and trigger avoidance | acute inpatient rehabilitation"
        ),
        nursing=_words(
            "neuro checks q1h, perrla 3mm brisk | gcs 14, confused to time | r sided weakness unchanged | "
            "seizure pads up, precautions maintained | nihss 4 this am | bedside swallow failed, npo | "
            "sbp goal < 180 maintained | pt oriented x2 | no seizure activity noted | "
            "pupils equal, reactive | moves all ext"
        ),
        procedures=_words(
            "craniotomy | thrombectomy | VP shunt placement | carotid endarterectomy | deep brain stimulator "
            "placement | lumbar drain placement"
        ),
    ),
    GASTROENTEROLOGY: _ClinicalClass(
        symptoms=_words(
            "epigastric pain radiating to the back | coffee-ground emesis | black tarry stools | "
            "bright red blood per rectum | nausea and vomiting | right upper quadrant pain after fatty meals | "
            "abdominal distension | yellowing of the skin | watery diarrhea | difficulty swallowing solids | "
            "early satiety and weight loss | heartburn | constipation alternating with diarrhea"
        ),
        diagnoses=_words(
            "upper gastrointestinal bleed | acute pancreatitis | acute cholecystitis | "
            "decompensated alcoholic cirrhosis | small bowel obstruction | Crohn disease flare | "
            "ulcerative colitis flare | diverticulitis | choledocholithiasis | peptic ulcer disease | "
            "hepatic encephalopathy | esophageal varices | gastroparesis"
        ),
        findings=_words(
            "epigastric tenderness without rebound | a distended tympanic abdomen | positive Murphy sign | "
            "shifting dullness | scleral icterus | hypoactive bowel sounds | left lower quadrant tenderness | "
            "melena on rectal examination | asterixis | spider angiomata | a soft nontender abdomen | "
            "hepatomegaly | guarding in the right lower quadrant"
        ),
        studies=_words(
            "EGD showed a clean-based duodenal ulcer | EGD showed grade 2 esophageal varices that were banded | "
            "CT abdomen showed peripancreatic fat stranding | right upper quadrant ultrasound showed "
            "gallstones with wall thickening | colonoscopy showed diffuse colitis | CT abdomen showed dilated "
            "small bowel loops with a transition point | MRCP showed a stone in the common bile duct | "
            "paracentesis showed no evidence of spontaneous bacterial peritonitis"
        ),
        labs=(
            _Lab("lipase", 30, 2400, 0, "U/L"),
            _Lab("ALT", 12, 480, 0, ""),
            _Lab("total bilirubin", 0.3, 8.5, 1, "mg/dL"),
            _Lab("albumin", 2.1, 4.4, 1, ""),
            _Lab("ammonia", 20, 140, 0, ""),
            _Lab("hemoglobin", 6.8, 13.9, 1, "g/dL"),
        ),
        medications=_words(
            "pantoprazole 40 mg IV twice daily | octreotide drip | ondansetron 4 mg as needed | "
            "lactulose 30 mL three times daily | rifaximin 550 mg twice daily | ceftriaxone for SBP prophylaxis | "
            "mesalamine 2.4 g daily | infliximab infusion | ursodiol 300 mg twice daily | "
            "polyethylene glycol daily | metoclopramide 10 mg before meals | sucralfate 1 g four times daily"
        ),
        plans=_words(
            "keep NPO and advance diet as tolerated | aggressive IV fluids with lactated Ringer's | "
            "transfuse for hemoglobin below 7 | gastroenterology for EGD within 24 hours | surgical consult "
            "for cholecystectomy | nasogastric tube to low intermittent suction | titrate lactulose to three "
            "bowel movements a day | stool studies including C. difficile | MRCP to evaluate the biliary tree | "
            "outpatient colonoscopy | alcohol cessation counseling | liver transplant evaluation"
        ),
        nursing=_words(
            "abd soft, distended, +bs | ngt to lis, 300 ml bilious output | melena x2 this shift | "
            "1 u prbc transfused w/o rxn | npo except meds | c/o n/v, zofran given | "
            "lactulose given, 3 bm | abd girth 102 cm | tolerating clears"
        ),
        procedures=_words(
            "cholecystectomy | appendectomy | TIPS procedure | partial colectomy | Whipple procedure | "
            "ERCP with sphincterotomy | gastric bypass"
        ),
    ),
    INFECTIOUS_DISEASE: _ClinicalClass(
        symptoms=_words(
            "fevers and rigors | chills and night sweats | redness and swelling of the left leg | "
            "dysuria and urinary frequency | flank pain | malaise and myalgias | a painful swollen joint | "
            "drainage from the surgical wound | confusion with fever | a spreading rash | "
            "a sore throat with difficulty swallowing | fever after recent travel"
        ),
        diagnoses=_words(
            "sepsis from a urinary source | cellulitis of the left lower extremity | pyelonephritis | "
            "MRSA bacteremia | Clostridioides difficile colitis | septic arthritis | "
            "infective endocarditis | osteomyelitis | surgical site infection | bacterial meningitis | "
            "influenza A | COVID-19 pneumonia | infected diabetic foot ulcer"
        ),
        findings=_words(
            "warmth and erythema extending to the mid-calf | costovertebral angle tenderness | "
            "a new holosystolic murmur | a purulent draining wound | a swollen warm right knee with limited "
            "range of motion | splinter hemorrhages | dry mucous membranes | a diffuse maculopapular rash | "
            "fluctuance over the medial thigh | tender cervical lymphadenopathy | rigors at the bedside"
        ),
        studies=_words(
            "blood cultures grew methicillin-resistant Staphylococcus aureus | urine culture grew "
            "pan-sensitive E. coli | transesophageal echocardiogram showed a mitral valve vegetation | "
            "MRI of the foot showed osteomyelitis of the first metatarsal | joint aspiration showed a cell "
            "count consistent with septic arthritis | stool was positive for C. difficile toxin | "
            "respiratory viral panel was positive | CT abdomen showed a perinephric abscess"
        ),
        labs=(
            _Lab("WBC", 3.5, 26.0, 1, ""),
            _Lab("lactate", 0.8, 6.2, 1, ""),
            _Lab("procalcitonin", 0.05, 18.0, 2, ""),
            _Lab("CRP", 2, 310, 0, "mg/L"),
            _Lab("ESR", 5, 120, 0, ""),
            _Lab("vancomycin trough", 8, 24, 1, ""),
        ),
        medications=_words(
            "vancomycin 1250 mg IV every 12 hours | piperacillin-tazobactam 4.5 g IV every 6 hours | "
            "ceftriaxone 2 g IV daily | cefazolin 2 g IV every 8 hours | oral vancomycin 125 mg four times daily | "
            "meropenem 1 g IV every 8 hours | doxycycline 100 mg twice daily | nitrofurantoin 100 mg twice daily | "
            "acyclovir 10 mg/kg IV | oseltamivir 75 mg twice daily | daptomycin 6 mg/kg daily | "
            "cephalexin 500 mg four times daily"
        ),
        plans=_words(
            "repeat blood cultures until negative | narrow antibiotics once sensitivities result | "
            "PICC line for six weeks of IV antibiotics | infectious disease consult | 30 mL/kg fluid bolus | "
            "source control with incision and drainage | contact precautions | mark the border of erythema | "
            "transesophageal echocardiogram | outpatient parenteral antibiotic therapy | "
            "remove the urinary catheter | weekly CBC and CMP while on therapy"
        ),
        nursing=_words(
            "tmax 102.4, tylenol given | bcx x2 drawn prior to abx | vanc trough pending | "
            "contact precautions maintained | erythema w/in marked borders | picc r basilic, flushes well | "
            "wound w/ purulent drainage, dsg changed | diaphoretic, rigors resolved | uop 30 ml/hr, foley in place | "
            "fluid bolus 1 l given"
        ),
        procedures=_words(
            "incision and drainage | below-knee amputation | joint washout | valve replacement | "
            "debridement of the sacral wound | hardware removal"
        ),
    ),
}

_COMORBIDITIES = _words(
    "hypertension | hyperlipidemia | type 2 diabetes mellitus | chronic kidney disease stage 3 | "
    "hypothyroidism | gastroesophageal reflux disease | obstructive sleep apnea | obesity | depression | "
    "generalized anxiety disorder | osteoarthritis of both knees | benign prostatic hyperplasia | "
    "coronary artery disease | atrial fibrillation | COPD | asthma | prior stroke | peripheral artery disease | "
    "chronic low back pain | gout | osteoporosis | anemia of chronic disease | alcohol use disorder | "
    "tobacco use | migraines | iron deficiency | glaucoma | psoriasis | rheumatoid arthritis | "
    "chronic hepatitis C | HIV on antiretroviral therapy | breast cancer in remission | prostate cancer"
)
_HOME_MEDICATIONS = _words(
    "lisinopril 20 mg daily | amlodipine 5 mg daily | metformin 1000 mg twice daily | atorvastatin 40 mg | "
    "levothyroxine 75 mcg | omeprazole 20 mg | sertraline 50 mg | insulin glargine 20 units nightly | "
    "hydrochlorothiazide 25 mg | tamsulosin 0.4 mg | allopurinol 100 mg | gabapentin 300 mg at bedtime | "
    "vitamin D 2000 units | losartan 50 mg | escitalopram 10 mg | trazodone 50 mg at bedtime | "
    "alendronate 70 mg weekly | ferrous sulfate 325 mg | fluticasone nasal spray | oxycodone 5 mg as needed | "
    "acetaminophen 650 mg as needed | simvastatin 20 mg | warfarin 5 mg | buspirone 10 mg | "
    "pravastatin 40 mg | glipizide 5 mg | famotidine 20 mg | duloxetine 60 mg | bupropion 150 mg | "
    "latanoprost eye drops | methotrexate 15 mg weekly | folic acid 1 mg"
)
_ALLERGIES = _words(
    "penicillin (rash) | sulfa drugs (hives) | codeine (nausea) | latex | shellfish | iodinated contrast | "
    "morphine (itching) | ciprofloxacin (tendon pain) | lisinopril (angioedema) | peanuts | vancomycin (red man "
    "syndrome) | cephalosporins"
)
_GENERAL_FINDINGS = _words(
    "alert and oriented to person, place and time | in no acute distress | appears uncomfortable | "
    "mucous membranes moist | skin warm and dry | no lower extremity edema | pupils equal and reactive | "
    "abdomen soft and nontender | lungs clear to auscultation | regular rate and rhythm | "
    "moving all extremities | speech fluent | no focal deficits | no rashes | calves soft and nontender | "
    "neck supple | well-appearing | pale and diaphoretic | thin and frail | obese"
)
_GENERAL_PLANS = _words(
    "continue home medications except as noted | DVT prophylaxis with subcutaneous heparin | "
    "physical therapy evaluation | case management for discharge planning | fall precautions | "
    "diabetic diet with sliding scale insulin | replete electrolytes as needed | code status confirmed as "
    "full code | code status is DNR/DNI per discussion with family | bowel regimen | pain control with "
    "acetaminophen | pneumococcal vaccine before discharge | follow up with primary care in one week | "
    "medication reconciliation completed | home health services arranged | low threshold to escalate care"
)
_HISTORY_OPENINGS = _words(
    "presents with | was admitted with | comes in complaining of | reports | was transferred for | "
    "was brought in by ambulance with | is seen today for follow-up of | called the clinic about"
)
_COURSE_PHRASES = _words(
    "Symptoms began two days ago | The symptoms started last week | This has been going on for about a month | "
    "The patient noted the symptoms this morning | The symptoms have worsened over the past three days | "
    "Symptoms are intermittent and worse at night | Since the last visit things have been slowly improving | "
    "Family reports a gradual decline over several weeks"
)
_INTERVAL_PHRASES = _words(
    "Overnight the patient remained stable | No acute events overnight | Overnight there was one episode of "
    "hypotension that responded to fluids | Tolerating diet | Ambulating in the hallway with assistance | "
    "Slept poorly overnight | Pain is better controlled today | Weaned to room air this morning"
)
_NOTE_TYPES = _words(
    "Progress Note | Admission History and Physical | Discharge Summary | Outpatient Clinic Note | "
    "Emergency Department Note | Consultation Note | Telephone Encounter"
)
_NURSING_OPENINGS = _words(
    "0700-1900 nsg note | 1900-0700 nsg note | nursing progress note | icu nsg note | micu rn note | "
    "ccu nursing note | shift note"
)
_NURSING_CLOSINGS = _words(
    "will cont to monitor | cont current poc | safety maintained, call light w/in reach | "
    "pain controlled w/ prn meds | turned q2h, skin intact | oob to chair x1 | will endorse to oncoming rn"
)
_HEADINGS = {  # section headings differ between authors
    "history": ("", "HPI: ", "History of present illness: ", "Subjective: "),
    "social": ("Social history: ", "SH: ", "Social: "),
    "medications": ("Medications: ", "Current medications: ", "Meds: "),
    "exam": ("Exam: ", "Physical exam: ", "PE: "),
    "labs": ("Labs: ", "Data: ", "Results: "),
    "plan": ("Assessment and plan: ", "A/P: ", "Impression and plan: "),
}
_TIMES = ("0400", "0600", "0800", "1000", "1200", "1400", "1600", "1800", "2000", "2200", "0200")

# Indirect identifiers: large pools and composed phrases, so most are one patient's own while some collide.
_RARE_CONDITIONS = _words(
    "Erdheim-Chester disease | Fabry disease | Takayasu arteritis | Wilson disease | Gaucher disease | "
    "Castleman disease | acute intermittent porphyria | Ehlers-Danlos syndrome | Marfan syndrome | "
    "hereditary angioedema | sarcoidosis | amyloidosis | pheochromocytoma | Addison disease | "
    "myotonic dystrophy | Kawasaki disease in childhood | Behcet disease | primary biliary cholangitis | "
    "Whipple disease | Huntington disease in the family | neurofibromatosis type 1 | tuberous sclerosis | "
    "Stevens-Johnson syndrome in the past | Kikuchi disease | relapsing polychondritis | "
    "Langerhans cell histiocytosis | Hashimoto encephalopathy | paroxysmal nocturnal hemoglobinuria | "
    "thrombotic thrombocytopenic purpura | eosinophilic granulomatosis with polyangiitis | "
    "granulomatosis with polyangiitis | alpha-1 antitrypsin deficiency | lymphangioleiomyomatosis | "
    "cystic fibrosis | hereditary hemorrhagic telangiectasia | Brugada syndrome | long QT syndrome | "
    "arrhythmogenic right ventricular cardiomyopathy | Moyamoya disease | narcolepsy with cataplexy | "
    "stiff person syndrome | Charcot-Marie-Tooth disease | Friedreich ataxia | Kearns-Sayre syndrome | "
    "hemochromatosis | achalasia | eosinophilic esophagitis | Zollinger-Ellison syndrome | "
    "autoimmune hepatitis | primary sclerosing cholangitis | Peutz-Jeghers syndrome | Lyme carditis | "
    "brucellosis | coccidioidomycosis | histoplasmosis | leprosy treated in youth | Q fever | "
    "Chagas disease | schistosomiasis | Whipple triad hypoglycemia | mastocytosis | cryoglobulinemia | "
    "Sjogren syndrome | dermatomyositis | scleroderma | polymyalgia rheumatica | Still disease | "
    "familial Mediterranean fever | Alport syndrome | polycystic kidney disease | Bartter syndrome | "
    "Cushing disease | acromegaly | Klinefelter syndrome | Turner syndrome | von Willebrand disease | "
    "hemophilia B | sickle cell trait | thalassemia minor | porphyria cutanea tarda | "
    "idiopathic intracranial hypertension | Tourette syndrome | Bell palsy twice | trigeminal neuralgia | "
    "Meniere disease | Raynaud phenomenon | Dupuytren contracture | Paget disease of bone | "
    "osteogenesis imperfecta | pectus excavatum repair | situs inversus | a solitary kidney | "
    "a congenital absence of the left thumb | dextrocardia | Wolff-Parkinson-White syndrome"
)
_DRUG_STEMS = _words(
    "vel | zan | tor | bri | cal | dex | fen | gal | hex | lum | mir | nor | pal | quin | ras | sel | tal | ulv | "
    "vor | xil | zel | ober | ami | cer | dor | epa | fora | gly | ibe | jeso | kal | lom | mepo | nefa | oza | "
    "pexi | remi | sota | tiva | uro | bexa | cipro | davo | eltra | fila"
)
_DRUG_MIDDLES = ("ta", "li", "ro", "ne", "vo", "mi", "xa", "do", "ri", "za", "ci", "ba", "")
_DRUG_SUFFIXES = _words(
    "mab | zumab | ximab | tinib | ciclib | vir | previr | pril | sartan | olol | parin | gliptin | gliflozin | "
    "lukast | setron | dronate | glutide | statin | azole | mycin | cillin | cycline | floxacin | lisib | rafenib"
)
_HOBBIES = _words(
    "beekeeping | woodturning | salsa dancing | competitive chess | restoring vintage motorcycles | "
    "birdwatching | quilting | ice fishing | rock climbing | playing the bagpipes | ham radio | "
    "building model trains | ballroom dancing | pottery | marathon running | sailing | taxidermy | "
    "collecting antique clocks | blacksmithing | knitting sweaters for a shelter | fly fishing | "
    "breeding orchids | amateur astronomy | playing the cello | bowling in a league | geocaching | "
    "coaching youth soccer | competitive barbecue | origami | stamp collecting | scuba diving | "
    "training sled dogs | raising alpacas | calligraphy | playing the banjo | motocross | archery | "
    "falconry | restoring church organs | glassblowing | kayaking | deer hunting | square dancing | "
    "composing hymns | bonsai | collecting vinyl records | mountain biking | surfing | cake decorating | "
    "volunteering at the food bank | playing bingo | crossword puzzles | gardening tomatoes | "
    "carving duck decoys | metal detecting | fencing | judo | tai chi | line dancing | skydiving | "
    "horseback riding | trap shooting | genealogy research | brewing beer at home | making cheese | "
    "playing the accordion | singing in a barbershop quartet | building birdhouses | paragliding | "
    "restoring an old Ford Mustang | curling | roller derby | lawn bowling | foraging for mushrooms | "
    "collecting baseball cards | beadwork | tending a community garden | ventriloquism | juggling | "
    "magic tricks | stained glass | bookbinding | sheep shearing | rodeo roping | dog agility competitions"
)
_PET_KINDS = _words(
    "dog | cat | parrot | beagle | golden retriever | German shepherd | tabby cat | Siamese cat | ferret | "
    "cockatiel | tortoise | rabbit | pot-bellied pig | horse | dachshund | chihuahua | bearded dragon | "
    "boxer | corgi | husky | goat | ball python | guinea pig | pit bull | poodle"
)
_PET_NAMES = _words(
    "Biscuit | Pickles | Mochi | Waffles | Pepper | Noodle | Gizmo | Sprinkles | Bandit | Pretzel | Rascal | "
    "Peanut | Tater | Muffin | Nugget | Zigzag | Doodle | Chowder | Snickers | Jellybean | Pudding | "
    "Meatball | Bubbles | Sarge | Moose | Cinnamon | Tofu | Rocket | Pumpkin | Squeak | Wiggles | Dumpling | "
    "Nacho | Cheddar | Sushi | Twinkie | Scrappy | Gumbo | Kiwi | Butterscotch | Pixel | Domino | Clementine | "
    "Hobbit | Sputnik | Tootsie | Marshmallow | Fig | Radar | Noodles | Cupcake | Whiskers | Taco | "
    "Popcorn | Truffle | Oreo | Ziggy | Shadow | Smokey | Boomer | Turbo | Sherlock | Pistachio | Fudge | "
    "Bonbon | Gravy | Kazoo | Mango | Paprika | Quokka | Rhubarb | Sprocket | Tinsel | Umber | Yoyo | Zucchini | "
    "Bramble | Crouton | Dingo | Echo | Fajita | Gnocchi | Hummus | Igloo | Jalapeno | Kumquat | Lentil | "
    "Mustard | Nutmeg | Okra | Parsnip | Quiche | Ravioli | Saffron | Tamale | Wasabi | Yeti | Zeppelin | "
    "Acorn | Bagel | Cobalt | Dynamo | Espresso | Falafel | Goblin | Hazelnut | Ingot | Jasper | Kettle | "
    "Lollipop | Macaroon | Nimbus | Ozzie | Panda | Quasar | Rooster | Snorkel | Trombone | Velcro | Walnut"
)
_COLLECTIBLES = _words(
    "antique fishing lures | snow globes | military medals | vintage typewriters | meteorites | "
    "Depression-era glass | salt and pepper shakers | pocket watches | railroad lanterns | matchbooks | "
    "beer steins | arrowheads | license plates | cookie jars | porcelain dolls | carnival glass | "
    "hood ornaments | music boxes | fountain pens | nutcrackers | cast iron skillets | thimbles | "
    "comic books | seashells | rare coins | fossils | teapots | pinball machines | barbed wire | "
    "old maps | gnomes | lunchboxes | kaleidoscopes | butterflies | telescopes | jukeboxes"
)
_LANGUAGES = _words(
    "Spanish | Portuguese | Haitian Creole | Vietnamese | Tagalog | Amharic | Gujarati | Punjabi | Somali | "
    "Cantonese | Mandarin | Russian | Polish | Arabic | Farsi | Korean | Hmong | Tigrinya | Nepali | Swahili | "
    "Yoruba | Ukrainian | Bosnian | Khmer | Lao | Burmese | Pashto | Dari | Albanian | Greek | Italian | "
    "Navajo | Cape Verdean Creole | Armenian | Bengali | Urdu | Tamil | Marshallese | Chuukese | Quechua"
)
_BEVERAGES = _words(
    "diet cola | black coffee | sweet tea | energy drinks | root beer | espresso | ginger ale | lemonade"
)
_HABITS = (
    "drinks {n} cans of {beverage} a day",
    "smokes {n} cigars a week",
    "walks {n} miles every morning",
    "works {n} night shifts a week",
    "drinks {n} cups of {beverage} daily",
    "chews tobacco, about {n} tins a week",
    "swims {n} laps at the community pool each day",
)
_VEHICLES = _words("motorcycle | tractor | snowmobile | boating | bicycle | all-terrain vehicle | car | bus")
_PAST_EVENTS = _words(
    "MI | CVA | TIA | DVT | PE | appy | lap chole | TKR | THR | hernia repair | PPM | CABG x3 | hip fx | "
    "colon ca | breast ca | PNA | GI bleed | MVA | ETOH w/d seizure | TURP"
)
_LONG_STANDING = _words(
    "on coumadin | on home O2 | on HD | insulin dependent | sober | in a wheelchair | on disability | "
    "in a nursing home"
)
_ICU_OPENINGS = _words(
    "npn 7a-7p | npn 7p-7a | nursing progress note 0700-1900 | micu npn | ccu npn 7a-7p | nsg note 1900-0700 | "
    "Nursing Progress Note 7a-7p | MICU NPN 7P-7A | sicu nsg note"
)
_SYSTEMS = (("neuro", NEUROLOGY), ("cv", CARDIOLOGY), ("resp", RESPIRATORY), ("gi", GASTROENTEROLOGY),
            ("id", INFECTIOUS_DISEASE))  # the order nurses chart body systems in
_UNREMARKABLE = {  # what a nurse charts for a body system that is not the problem
    NEUROLOGY: _words("a&ox3, mae, follows commands | alert, oriented x3, perrl | sedated on propofol, arousable "
                      "to voice | lethargic but easily arousable, mae"),
    CARDIOLOGY: _words("hr 70s-80s nsr, no ectopy | sbp 110s-130s, pulses palp | hr 90s st, sbp stable | "
                       "nsr 60s-70s, no edema"),
    RESPIRATORY: _words("ls clear bilat, sats 95-98% on 2l nc | ls clear, dim at bases, ra | sats mid 90s on ra, "
                        "no sob | ls cta, rr teens"),
    GASTROENTEROLOGY: _words("abd soft, nt/nd, +bs | tolerating po, no n/v | abd benign, no bm this shift | "
                             "taking po meds w/o difficulty"),
    INFECTIOUS_DISEASE: _words("afebrile | tmax 99.1 | afebrile, wbc wnl | no s/s infection"),
}
_OTHER_SYSTEMS = (
    ("gu", _words("foley draining clear yellow urine, uop >30 cc/hr | voiding qs | foley to gravity, uop adequate")),
    ("skin", _words("skin intact | coccyx reddened, turned q2h | ivs patent, sites wnl")),
)
_GENERIC_TRANSFERS = _words("tx from OSH | transferred from osh | from outside hosp")  # 'outside hospital': no one's
_VISITS = _words(
    "at bedside | called | in to visit | called for update | updated by phone | visited, asking appropriate "
    "questions | at bedside, updated on poc"
)
_RELATION_ABBREVIATIONS = {"daughter": "dtr", "husband": "hus", "brother": "bro", "sister": "sis",
                           "granddaughter": "gdtr"}
_FEMALE_RELATIVES = ("wife", "daughter", "sister", "niece", "granddaughter")
_MALE_RELATIVES = ("husband", "son", "brother", "nephew", "grandson")
_RELATIVES = _FEMALE_RELATIVES + _MALE_RELATIVES
_MILITARY = _words("Army | Navy | Marine Corps | Air Force | Coast Guard | National Guard")
_SAINTS = _words("Mary | Joseph | Luke | Vincent | Francis | Jude | Anne | Elizabeth | Agnes | Michael")
_US_STATES = _words(
    "Ohio | Texas | Oregon | Maine | Georgia | Iowa | Nevada | Vermont | Kansas | Alabama | Montana | Utah"
)
_PHONE_FORMATS = ("({a}) {b}-{c}", "{a}-{b}-{c}", "{a}.{b}.{c}", "+1 {a} {b} {c}", "{a} {b} {c}")
_EMAIL_DOMAINS = _words("gmail.com | yahoo.com | hotmail.com | aol.com | outlook.com | comcast.net | icloud.com")


def _span(text: str, label: str) -> tuple[str, str]:
    return (text, label)


def _recase(pieces: Sequence[Piece], case) -> list[Piece]:
    """The pieces with `case` (str.upper, str.lower, ...) applied to plain text and identifiers alike."""
    return [case(piece) if isinstance(piece, str) else _span(case(piece[0]), piece[1]) for piece in pieces]


def _as_written(text: str) -> str:
    return text


def _typed_case(rng: random.Random):
    """How a nurse types a line or a name: mostly in lower case, else in capitals or as written."""
    form = rng.random()
    return str.lower if form < 0.5 else str.upper if form < 0.75 else _as_written


class _NoteText:
    """Accumulates a note piece by piece and records the offsets of identifiers as they are appended."""

    def __init__(self, caps: bool):
        self.caps = caps
        self.parts: list[str] = []
        self.phi: list[dict] = []
        self.length = 0

    def add(self, *pieces: Piece) -> None:
        for piece in pieces:
            text, label = piece if isinstance(piece, tuple) else (piece, None)
            if self.caps:
                text = text.upper()
            if label is not None:
                self.phi.append({"start": self.length, "end": self.length + len(text), "label": label})
            self.parts.append(text)
            self.length += len(text)

    def text(self) -> str:
        return "".join(self.parts)


@dataclass(frozen=True)
class _Clinician:
    first: str
    last: str
    specialty: str  # a note class, "internal medicine" or "nursing"
    email: str
    pager: str

    def mention(self, rng: random.Random, caps: bool, informal: bool = False) -> list[Piece]:
        """How notes refer to a clinician: 'Dr. Jane Roe', 'Dr. Roe', 'Jane Roe, MD', 'DR ROE'; informally,
        as nurses write to each other, untitled and in lower case: 'md roe', 'roe rn', 'roe', 'jane'."""
        nurse = self.specialty == "nursing"
        if informal:
            last, credential = self.last.lower(), "rn" if nurse else rng.choice(("md", "dr"))
            form = rng.randrange(4)
            if form == 0:
                return [f"{credential} ", _span(last, NAME)]
            if form == 1:
                return [_span(last, NAME), " rn" if nurse else " md"]
            return [_span(last if form == 2 else self.first.lower(), NAME)]
        if caps:
            return [_span(self.last, NAME), " RN"] if nurse else ["DR ", _span(self.last, NAME)]
        if nurse:
            return [_span(f"{self.first} {self.last}", NAME), ", RN"]
        form = rng.randrange(4)
        if form == 0:
            return ["Dr. ", _span(f"{self.first} {self.last}", NAME)]
        if form == 1:
            return ["Dr. ", _span(self.last, NAME)]
        if form == 2:
            return [_span(f"{self.first} {self.last}", NAME), ", MD"]
        return [_span(f"{self.first[0]}. {self.last}", NAME), ", MD"]

    def signature(self, rng: random.Random) -> list[Piece]:
        """A nurse's sign-off at the end of a note as typed: 'JR RN', 'j roe rn', 'J. Roe, RN', 'JANE R RN'."""
        first, last = self.first, self.last
        form = rng.randrange(5)
        if form == 0:
            pieces = [_span(first[0] + last[0], NAME), " RN"]
        elif form == 1:
            pieces = [_span(f"{first[0]} {last}", NAME), " rn"]
        elif form == 2:
            pieces = [_span(f"{first[0]}. {last}", NAME), ", RN"]
        elif form == 3:
            pieces = [_span(f"{first} {last[0]}", NAME), " rn"]
        else:
            pieces = [_span(f"{last}, {first}", NAME), " RN"]
        return _recase(pieces, _typed_case(rng))


@dataclass(frozen=True)
class _Hospital:
    name: str
    acronym: str  # what notes call it: 'CMH' for 'Carney Memorial Hospital'
    domain: str
    phone: str

    def mention(self, rng: random.Random, informal: bool) -> Piece:
        return _span(self.acronym if informal else self.name, HOSPITAL)


@dataclass(frozen=True)
class _Staff:
    """Clinicians, hospitals and the towns around them, shared by many patients; drawn from the corpus seed alone."""

    doctors: tuple[_Clinician, ...]
    nurses: tuple[_Clinician, ...]
    hospitals: tuple[_Hospital, ...]
    towns: tuple[str, ...]  # where most patients live

    def doctor_for(self, specialty: str, rng: random.Random) -> _Clinician:
        return rng.choice([doctor for doctor in self.doctors if doctor.specialty == specialty])


def _digits(rng: random.Random, count: int) -> str:
    return "".join(rng.choice("0123456789") for _ in range(count))


def _phone(rng: random.Random) -> str:
    area = f"{rng.randint(2, 9)}{_digits(rng, 2)}"
    exchange = f"{rng.randint(2, 9)}{_digits(rng, 2)}"
    return rng.choice(_PHONE_FORMATS).format(a=area, b=exchange, c=_digits(rng, 4))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z]", "", text.lower())


# Names that are also everyday words: the NER's ambiguity rule asks for context before taking them as names.
_WORD_NAMES = {
    "female": _words("Rose | Hope | Faith | Grace | Joy | June | Iris | Ivy | Dawn | Holly | Pearl | Ruby | Amber "
                     "| Daisy | Summer | Crystal | Violet | Heather | Olive | Ginger"),
    "male": _words("Bill | Mark | Frank | Grant | Will | Chase | Drew | Guy | Jack | Rich | Hunter | Art | Dean "
                   "| Miles | Wade | Rusty | Buck | Clay | Glen | Forrest"),
    "last": _words("Hall | Page | Bell | Cook | Long | Young | King | Wood | Rice | Fox | Black | White | Brown "
                   "| Green | Gray | Hill | Lane | Stone | Price | Banks | Little | Park | Hunt | Mills | Cross "
                   "| Marsh | Ford | Love | Short | Swift | Bishop | Mason | Cash | Frost | Snow | Hart | Burns "
                   "| Church | Bond | Best | Wise | Sharp | Strong | Noble | Post | Small | Sweet | Moss | Reed"),
}
# Syllables of invented names, and endings that make them read as first names of either sex or as surnames.
_ONSETS = _words("b | br | ch | d | dr | f | g | gr | h | j | k | kl | l | m | n | p | r | s | sh | st | t | tr "
                 "| v | w | z")
_VOWELS = _words("a | e | i | o | u | a | e | i | o | ai | ei | ou")
_CODAS = ("", "", "", "n", "r", "l", "s", "k", "m", "nd", "rt", "sk", "x")
_ENDINGS = {"female": _words("a | ia | elle | ine | a"), "male": _words("o | an | el | is | ar"),
            "last": ("", "", "er", "an", "ek", "ini", "ez", "ak", "is", "ov")}


@cache
def _gazetteer_words() -> frozenset[str]:
    """Every word of the NER's name and place gazetteers, lower-cased: invented names avoid them all."""
    folder = ner_model_folder("clinical_en")
    lines = (line for name in ("first_names.txt", "last_names.txt", "us_places.txt", "places.txt")
             for line in (folder / name).read_text(encoding="utf-8").splitlines() if not line.startswith("#"))
    return frozenset(word.lower() for line in lines for word in line.split())


_CLUMSY = re.compile(r"[aeiou]{3}|([aeiou])\1|[^aeiou]{4}")  # 'biaa', 'ouo', 'rthn': hard to read as a name


def _invented_name(rng: random.Random, kind: str) -> str:
    """A pronounceable name in no gazetteer ('Drousken', 'Veimara'); `kind` is 'female', 'male' or 'last'."""
    while True:
        name = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(2))
        name += rng.choice(_ENDINGS[kind])
        if 4 <= len(name) <= 9 and not _CLUMSY.search(name) and name not in _gazetteer_words():
            return name.capitalize()


def _realistic_name(faker_name: str, kind: str, rng: random.Random, realism: float) -> str:
    """Faker's name or, with chance `realism * INVENTED_NAME_SHARE`, an invented one, and with chance
    `realism * WORD_NAME_SHARE` one that is also a common word. Faker's name is always drawn by the caller,
    so Faker's later draws, and everything else about the patient, stay as at realism 0."""
    roll = rng.random()
    if roll < realism * INVENTED_NAME_SHARE:
        return _invented_name(rng, kind)
    if roll < realism * (INVENTED_NAME_SHARE + WORD_NAME_SHARE):
        return rng.choice(_WORD_NAMES[kind])
    return faker_name


def _draw_staff(seed: int, fake: Faker, realism: float = REALISM) -> _Staff:
    rng = random.Random(f"ppmlm-synth-staff:{seed}")
    fake.seed_instance(f"ppmlm-synth-staff-faker:{seed}")
    names = random.Random(f"ppmlm-synth-staff-names:{seed}")  # its own stream: the rest is as at realism 0
    saint, surnames = rng.choice(_SAINTS), [fake.last_name() for _ in range(3)]
    # Real towns (Faker's geo list, as real notes name real towns) and invented ones (towns no list holds).
    towns = [fake.local_latlng(country_code="US")[2] if rng.random() < 0.5 else fake.city() for _ in range(LOCAL_TOWNS)]
    named_by = [  # (hospital name, the distinctive part its web domain is made of, its acronym)
        (f"St. {saint}'s Medical Center", f"st{saint}s", f"S{saint[0]}MC"),
        (f"{surnames[0]} Memorial Hospital", f"{surnames[0]}memorial", f"{surnames[0][0]}MH"),
        (f"{towns[0]} General Hospital", f"{towns[0]}general", f"{towns[0][0]}GH"),
        (f"{surnames[1]} Regional Medical Center", f"{surnames[1]}regional", f"{surnames[1][0]}RMC"),
        (f"University Hospital of {towns[1]}", f"uh{towns[1]}", f"UH{towns[1][0]}"),
        (f"Mercy Hospital of {towns[2]}", f"mercy{towns[2]}", f"MH{towns[2][0]}"),
        (f"{towns[3]} Community Hospital", f"{towns[3]}community", f"{towns[3][0]}CH"),
        (f"{surnames[2]} Veterans Affairs Medical Center", f"{surnames[2]}va", f"{surnames[2][0]}VA"),
    ]
    hospitals = tuple(_Hospital(name, acronym, _slug(key) + ".org", _phone(rng)) for name, key, acronym in named_by)
    clinicians = []
    for specialty in CLASSES + ("internal medicine", "nursing", "nursing"):
        for _ in range(4):
            first, last = fake.first_name(), fake.last_name()
            first = _realistic_name(first, names.choice(("female", "male")), names, realism)
            last = _realistic_name(last, "last", names, realism)
            email = f"{_slug(first)[0]}{_slug(last)}@{rng.choice(hospitals).domain}"
            clinicians.append(_Clinician(first, last, specialty, email, _digits(rng, 5)))
    return _Staff(
        doctors=tuple(c for c in clinicians if c.specialty != "nursing"),
        nurses=tuple(c for c in clinicians if c.specialty == "nursing"),
        hospitals=hospitals,
        towns=tuple(towns),
    )


@dataclass(frozen=True)
class _Patient:
    """Everything drawn once per patient; notes pick from it, so details recur across the notes."""

    user_id: str
    first: str
    last: str
    male: bool
    birth: dt.date
    main_class: str
    mrn: str
    ssn: str
    insurance_id: str
    phone: str
    email: str
    street: str
    city: str
    state: str
    zip_code: str
    hospital: _Hospital
    attending: _Clinician
    primary_care: _Clinician
    comorbidities: list[str]
    home_medications: list[str]
    allergies: list[str]
    past_procedure: tuple[str, int]
    past_events: list[tuple[str, int]]  # ('MI', 1992): history as nurses abbreviate it
    long_standing: tuple[str, int]  # ('on home O2', 2009): 'since 2009'
    referrer: _Hospital  # transferred from there
    facts: list[list[Piece]]  # indirect identifiers as ready-made sentences
    relative: tuple[str, str, str]  # relation, first name, phone
    study_drug: str
    rare_condition: str | None
    first_visit: dt.date
    n_notes: int

    @property
    def title(self) -> str:
        return "Mr." if self.male else "Ms."

    def age_on(self, day: dt.date) -> int:
        return day.year - self.birth.year - ((day.month, day.day) < (self.birth.month, self.birth.day))


def _occupation(fake: Faker) -> str:
    """Faker's job titles ('Engineer, mining (ret.)') rewritten as they would appear in prose."""
    job = re.sub(r"\s*\(.*?\)", "", fake.job())
    if ", " in job:
        head, qualifier = job.split(", ", 1)
        job = f"{qualifier} {head}"
    return job.lower() if not job.isupper() else job


def _study_drug(rng: random.Random) -> str:
    return rng.choice(_DRUG_STEMS) + rng.choice(_DRUG_MIDDLES) + rng.choice(_DRUG_SUFFIXES)


def _date_text(day: dt.date, rng: random.Random, caps: bool) -> str:
    """A date in one of the formats clinicians write; nursing notes favour the short ones."""
    if caps:
        forms = ("{m}/{d}", "{m}/{d}", "{m}/{d}/{yy}", "{m}/{d}/{y}")
    else:
        forms = ("{mm}/{dd}/{y}", "{m}/{d}/{y}", "{y}-{mm}-{dd}", "{month} {d}, {y}", "{d} {mon} {y}",
                 "{month} {d}", "{m}/{d}", "{mon} {d}th")
    form = rng.choice(forms)
    if form == "{mon} {d}th":
        suffix = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}.get(day.day, "th")
        form = "{mon} {d}" + suffix
    return form.format(
        m=day.month, d=day.day, mm=f"{day.month:02d}", dd=f"{day.day:02d}", y=day.year, yy=f"{day.year % 100:02d}",
        month=day.strftime("%B"), mon=day.strftime("%b"),
    )


def _life_event(rng: random.Random, fake: Faker, first_visit: dt.date) -> list[Piece]:
    year = str(first_visit.year - rng.randint(1, 30))
    relation = rng.choice(_RELATIVES)
    form = rng.randrange(9)
    if form == 0:
        return ["Moved here from ", _span(fake.city(), LOCATION), ", ", _span(rng.choice(_US_STATES), LOCATION),
                " in ", _span(year, DATE), " after the family farm was sold."]
    if form == 1:
        return ["Lost a ", relation, " in a house fire in ", _span(year, DATE), "."]
    if form == 2:
        return ["Ran the ", _span(fake.city(), LOCATION), " marathon in ", _span(year, DATE), "."]
    if form == 3:
        return ["Recently returned from a ", str(rng.randint(2, 6)), "-week trip to ",
                _span(fake.country(), LOCATION), "."]
    if form == 4:
        return [f"Served {rng.randint(3, 24)} years in the {rng.choice(_MILITARY)}, with a deployment to ",
                _span(fake.country(), LOCATION), "."]
    if form == 5:
        scar = f"{rng.choice(('left', 'right'))} {rng.choice(('forearm', 'shin', 'cheek', 'scalp'))}"
        return [f"Survived a {rng.choice(_VEHICLES)} accident in ", _span(year, DATE),
                f" that left a scar across the {scar}."]
    if form == 6:
        return [f"Won the county fair {rng.choice(('pie', 'pumpkin', 'chili', 'quilt', 'hog'))} contest in ",
                _span(year, DATE), "."]
    if form == 7:
        return [f"Is the primary caregiver for a {relation} with {rng.choice(_COMORBIDITIES)}."]
    return ["Was a contestant on a television game show in ", _span(year, DATE), "."]


def _draw_patient(seed: int, index: int, fake: Faker, staff: _Staff, rng: random.Random,
                  realism: float = REALISM) -> _Patient:
    fake.seed_instance(f"ppmlm-synth-patient-faker:{seed}:{index}")
    names = random.Random(f"ppmlm-synth-patient-names:{seed}:{index}")  # its own stream: the rest is as at realism 0
    male = rng.random() < 0.5
    sex = "male" if male else "female"
    first = _realistic_name(fake.first_name_male() if male else fake.first_name_female(), sex, names, realism)
    last = _realistic_name(fake.last_name(), "last", names, realism)
    first_visit = dt.date(2014, 1, 1) + dt.timedelta(days=rng.randrange(10 * 365))
    birth = first_visit - dt.timedelta(days=rng.randint(19 * 365, 95 * 365))
    hospital = rng.choice(staff.hospitals)
    adult_years = max(1, min(30, first_visit.year - birth.year - 18))  # past events happen in adulthood
    main_class = rng.choice(CLASSES)
    hometown = fake.city()
    occupation = _occupation(fake)
    hobbies = rng.sample(_HOBBIES, rng.choice((1, 1, 2)))
    pet = (rng.choice(_PET_KINDS), rng.choice(_PET_NAMES))
    relation = rng.choice(_RELATIVES)
    relative_sex = "female" if relation in _FEMALE_RELATIVES else "male"
    relative_first = _realistic_name(fake.first_name_female() if relative_sex == "female" else fake.first_name_male(),
                                     relative_sex, names, realism)
    habit = rng.choice(_HABITS).format(n=rng.randint(2, 12), beverage=rng.choice(_BEVERAGES))
    facts: list[list[Piece]] = [
        [f"Works as a {occupation}."],
        ["Grew up in ", _span(hometown, LOCATION), "."],
        [f"Enjoys {_join(hobbies)}."] if rng.random() < 0.6 else [f"Collects {rng.choice(_COLLECTIBLES)}."],
        [f"Lives with a {pet[0]} named {pet[1]}."],
        [f"Reports that {'he' if male else 'she'} {habit}."],
        _life_event(rng, fake, first_visit),
    ]
    if rng.random() < 0.5:
        facts.append(["Has worked at ", _span(fake.company(), HOSPITAL), f" for {rng.randint(2, 35)} years."])
    if rng.random() < 0.3:
        facts.append([f"Primary language is {rng.choice(_LANGUAGES)}; an interpreter was used."])
    return _Patient(
        user_id=f"P{index:06d}",
        first=first,
        last=last,
        male=male,
        birth=birth,
        main_class=main_class,
        mrn=_digits(rng, rng.choice((7, 8, 9))),
        ssn=f"{_digits(rng, 3)}-{_digits(rng, 2)}-{_digits(rng, 4)}",
        insurance_id=rng.choice(("XJ", "BCB", "HMO", "UHC", "AET")) + _digits(rng, 9),
        phone=_phone(rng),
        email=f"{_slug(first)}{rng.choice(('.', '_', ''))}{_slug(last)}{rng.randint(1, 99)}"
              f"@{rng.choice(_EMAIL_DOMAINS)}",
        street=fake.street_address(),
        city=rng.choice(staff.towns) if rng.random() < LOCAL_SHARE else fake.city(),
        state=rng.choice(_US_STATES),
        zip_code=fake.zipcode(),
        hospital=hospital,
        attending=staff.doctor_for("internal medicine", rng),
        primary_care=rng.choice(staff.doctors),
        comorbidities=rng.sample(_COMORBIDITIES, rng.randint(1, 4)),
        home_medications=rng.sample(_HOME_MEDICATIONS, rng.randint(2, 6)),
        allergies=rng.sample(_ALLERGIES, rng.randint(0, 2)),
        past_procedure=(rng.choice(_CLASS_CONTENT[main_class].procedures), first_visit.year - rng.randint(1, 15)),
        past_events=[(event, first_visit.year - rng.randint(1, adult_years))
                     for event in rng.sample(_PAST_EVENTS, rng.randint(1, 2))],
        long_standing=(rng.choice(_LONG_STANDING), first_visit.year - rng.randint(1, adult_years)),
        referrer=rng.choice([other for other in staff.hospitals if other != hospital]),
        facts=facts,
        relative=(relation, relative_first, _phone(rng)),
        study_drug=_study_drug(rng),
        rare_condition=rng.choice(_RARE_CONDITIONS) if rng.random() < 0.6 else None,
        first_visit=first_visit,
        n_notes=rng.randint(MIN_NOTES, MAX_NOTES),
    )


def _vitals(rng: random.Random, problems: Sequence[str]) -> str:
    feverish = INFECTIOUS_DISEASE in problems
    hypoxic = RESPIRATORY in problems
    temperature = rng.uniform(100.4, 103.2) if feverish and rng.random() < 0.7 else rng.uniform(97.0, 99.5)
    saturation = rng.randint(84, 93) if hypoxic else rng.randint(93, 100)
    oxygen = rng.choice(("2L nasal cannula", "4L nasal cannula", "room air")) if hypoxic else "room air"
    return (f"BP {rng.randint(92, 182)}/{rng.randint(48, 104)}, HR {rng.randint(52, 128)}, "
            f"RR {rng.randint(12, 30 if hypoxic else 22)}, T {temperature:.1f} F, SpO2 {saturation}% on {oxygen}")


def _name_mentions(patient: _Patient, rng: random.Random, caps: bool) -> list[Piece]:
    if caps:
        form = rng.randrange(3)
        if form == 0:
            return ["PT"]
        return [_span(patient.first, NAME)] if form == 1 else [patient.title[:-1] + " ", _span(patient.last, NAME)]
    form = rng.randrange(3)
    if form == 0:
        return [_span(f"{patient.first} {patient.last}", NAME)]
    if form == 1:
        return [patient.title + " ", _span(patient.last, NAME)]
    return [_span(f"{patient.last}, {patient.first}", NAME)]


def _age_phrase(age: int, rng: random.Random, caps: bool, male: bool) -> list[Piece]:
    sex = ("M" if male else "F") if caps else ("man" if male else "woman")
    if caps:
        return [_span(str(age), AGE), f" YO {sex}"]
    form = rng.randrange(3)
    if form == 0:
        return ["a ", _span(str(age), AGE), f"-year-old {sex}"]
    if form == 1:
        return ["a ", _span(str(age), AGE), f" yo {sex}"]
    return [f"a {sex} aged ", _span(str(age), AGE)]


def _year(year: int, rng: random.Random, realism: float) -> Piece:
    """A year as written: '1992', or as nurses often write it, '92."""
    return _span(f"'{year % 100:02d}" if rng.random() < realism else str(year), DATE)


def _dated(event: str, year: int, rng: random.Random, realism: float) -> list[Piece]:
    """'MI 1992', "MI in '92", 'MI (1992)'."""
    form = rng.randrange(3)
    if form == 2:
        return [f"{event} (", _year(year, rng, realism), ")"]
    return [event + (" in " if form else " "), _year(year, rng, realism)]


def _history(patient: _Patient, rng: random.Random, realism: float) -> list[Piece]:
    """Past events with their years, then what has lasted since when: "MI '92, TKR 2005, on HD since 2011"."""
    pieces: list[Piece] = []
    for event, year in patient.past_events:
        pieces += [*_dated(event, year, rng, realism), ", "]
    phrase, since = patient.long_standing
    return [*pieces, f"{phrase} since ", _year(since, rng, realism)]


def _transfer(patient: _Patient, rng: random.Random, informal: bool) -> list[Piece]:
    """Where the patient came from: 'tx from CMH ED', 'transferred from Carney Memorial Hospital', or now and
    then the generic 'OSH' (outside hospital), which names no one."""
    if rng.random() < 0.2:
        return [rng.choice(_GENERIC_TRANSFERS)]
    return [rng.choice(("tx from ", "transferred from ", "pt from ", "sent from ")),
            patient.referrer.mention(rng, informal), rng.choice(("", " ED", " for higher level of care"))]


def _relative_visit(patient: _Patient, rng: random.Random, informal: bool) -> list[Piece]:
    """'wife Mary at bedside'; informally 'wife mary at bedside', 'son JOHN called', 'dtr sarah in to visit'."""
    relation, first, _ = patient.relative
    if informal:
        relation = _RELATION_ABBREVIATIONS.get(relation, relation) if rng.random() < 0.4 else relation
        first = _typed_case(rng)(first)
    return [f"{relation} ", _span(first, NAME), f" {rng.choice(_VISITS)}"]


def _home(patient: _Patient, rng: random.Random, informal: bool) -> list[Piece]:
    """'lives in Waltham w/ wife'; informally the town in capitals or lower case: 'home to brockton'."""
    town = _typed_case(rng)(patient.city) if informal else patient.city
    form = rng.randrange(3)
    if form == 0:
        return ["lives in ", _span(town, LOCATION), f" w/ {patient.relative[0]}"]
    if form == 1:
        return ["lives in ", _span(town, LOCATION)]
    return [rng.choice(("plan is d/c home to ", "home to ", "pt from ")), _span(town, LOCATION)]


def _join(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _sentence(text: str) -> str:
    """Capitalizes the first letter only (str.capitalize would lower 'CBC' and 'E. coli')."""
    return text[:1].upper() + text[1:]


def _prose_note(patient: _Patient, day: dt.date, problems: Sequence[str], rng: random.Random, staff: _Staff,
                note: _NoteText, realism: float) -> None:
    """A physician's note. `problems`: the classes of its active problems, the principal one (the label) first."""
    contents = [_CLASS_CONTENT[problem] for problem in problems]
    hospital = patient.hospital if rng.random() < 0.85 else rng.choice(staff.hospitals)
    note.add(rng.choice(_NOTE_TYPES), " - ", _span(hospital.name, HOSPITAL), "\n")
    note.add("Date of service: ", _span(_date_text(day, rng, False), DATE))
    if rng.random() < 0.5:
        note.add(rng.choice(("   MRN: ", "   MRN ", "   MR# ")), _span(patient.mrn, ID))
    if rng.random() < 0.25:
        note.add("   Encounter ", _span(_digits(rng, 10), ID))
    note.add("\n\n")
    heading = {section: rng.choice(choices) for section, choices in _HEADINGS.items()}

    history = list(patient.comorbidities)
    if patient.rare_condition and rng.random() < FACT_SHARE:
        history.append(patient.rare_condition)
    note.add(heading["history"], *_name_mentions(patient, rng, False), " is ",
             *_age_phrase(patient.age_on(day), rng, False, patient.male), f" with a history of {_join(history)}")
    if rng.random() < 0.5:
        note.add(", status post ", *_dated(*patient.past_procedure, rng, realism))
    symptoms = [symptom for content in contents for symptom in rng.sample(content.symptoms, rng.randint(1, 3))]
    denied = rng.choice([symptom for symptom in rng.choice(contents).symptoms if symptom not in symptoms])
    note.add(f", who {rng.choice(_HISTORY_OPENINGS)} {_join(symptoms)}. {rng.choice(_COURSE_PHRASES)}. ")
    if rng.random() < 0.3:
        note.add("Transferred from ", patient.referrer.mention(rng, rng.random() < realism), " for further care. ")
    if rng.random() < 0.4:
        note.add("History also notable for ", *_history(patient, rng, realism), ". ")
    if rng.random() < 0.5:
        note.add(rng.choice(_INTERVAL_PHRASES), ". ")
    if rng.random() < 0.5:
        note.add(f"{patient.title} ", _span(patient.last, NAME), f" denies {denied}.\n\n")
    else:
        note.add(f"{'He' if patient.male else 'She'} denies {denied}.\n\n")

    note.add(heading["social"])
    if rng.random() < FACT_SHARE:
        note.add("Lives in ", _span(patient.city, LOCATION), ". ")
    for fact in patient.facts:
        if rng.random() < FACT_SHARE:
            note.add(*fact, " ")
    relation, relative_first, relative_phone = patient.relative
    if rng.random() < FACT_SHARE:
        note.add(f"{_sentence(relation)} ", _span(relative_first, NAME), " is the emergency contact")
        if rng.random() < 0.6:
            note.add(", reachable at ", _span(relative_phone, PHONE))
        note.add(". ")
    note.add("\n")

    medications = patient.home_medications + [
        medication for content in contents for medication in rng.sample(content.medications, rng.randint(1, 3))
    ]
    note.add(f"{heading['medications']}{'; '.join(medications)}")
    if rng.random() < FACT_SHARE:
        note.add(f"; {patient.study_drug} through a research study")
    allergies = "; ".join(patient.allergies) if patient.allergies else "no known drug allergies"
    note.add(f".\nAllergies: {allergies}.\n\n")

    note.add(f"Vitals: {_vitals(rng, problems)}.\n")
    findings = rng.sample(_GENERAL_FINDINGS, 2)
    findings += [finding for content in contents for finding in rng.sample(content.findings, rng.randint(1, 3))]
    note.add(f"{heading['exam']}{'; '.join(findings)}.\n")
    labs = [lab.draw(rng) for content in contents for lab in rng.sample(content.labs, rng.randint(1, 3))]
    studies = [_sentence(rng.choice(content.studies)) for content in contents]
    note.add(f"{heading['labs']}{', '.join(labs)}. {'. '.join(studies)}.\n\n")

    note.add(heading["plan"])
    for number, content in enumerate(contents, 1):
        plans = rng.sample(content.plans, rng.randint(2, 4))
        note.add(f"{number}. {_sentence(rng.choice(content.diagnoses))}: {'; '.join(plans)}. ")
    note.add(" ".join(f"{_sentence(plan)}." for plan in rng.sample(_GENERAL_PLANS, rng.randint(1, 2))), " ")
    note.add("Discussed with ", *staff.doctor_for(problems[0], rng).mention(rng, False))
    for problem in problems[1:]:
        note.add(" and ", *staff.doctor_for(problem, rng).mention(rng, False))
    note.add(".\n\n")

    _prose_contact_lines(patient, day, rng, hospital, note, realism)
    note.add("Electronically signed by ", *patient.attending.mention(rng, False), " on ",
             _span(_date_text(day, rng, False), DATE))
    if rng.random() < 0.3:
        note.add(", pager ", _span(patient.attending.pager, PHONE))
    note.add(".")


def _prose_contact_lines(patient: _Patient, day: dt.date, rng: random.Random, hospital: _Hospital,
                         note: _NoteText, realism: float) -> None:
    """Follow-up and registration details: where addresses, phones, e-mails, SSNs and URLs show up."""
    follow_up = day + dt.timedelta(days=rng.choice((7, 10, 14, 21, 28)))
    note.add("Follow up with ", *patient.primary_care.mention(rng, False))
    if rng.random() < 0.5:
        note.add(" at ", hospital.mention(rng, rng.random() < realism))
    note.add(" on ", _span(_date_text(follow_up, rng, False), DATE), "; clinic line ", _span(hospital.phone, PHONE),
             ". ")
    if rng.random() < 0.35:
        note.add("Patient can be reached at ", _span(patient.phone, PHONE))
        if rng.random() < 0.5:
            note.add(" or by e-mail at ", _span(patient.email, EMAIL))
        note.add(". ")
    if rng.random() < 0.25:
        note.add("Address on file: ", _span(patient.street, LOCATION), ", ", _span(patient.city, LOCATION), ", ",
                 _span(patient.state, LOCATION), " ", _span(patient.zip_code, LOCATION), ". ")
    if rng.random() < 0.12:
        note.add("Registration: SSN ", _span(patient.ssn, ID), ", insurance ID ", _span(patient.insurance_id, ID), ". ")
    if rng.random() < 0.1:
        url = f"https://portal.{hospital.domain}/records/{patient.mrn}"
        note.add("Results released to the patient portal at ", _span(url, URL), ". ")
    if rng.random() < 0.08:
        note.add("Questions to the care team at ", _span(patient.primary_care.email, EMAIL), ". ")
    note.add("\n")


def _nursing_note(patient: _Patient, day: dt.date, problems: Sequence[str], rng: random.Random, staff: _Staff,
                  note: _NoteText, realism: float) -> None:
    """A terse ICU nursing note, written in capitals by the note builder; `problems` as in `_prose_note`."""
    contents = [_CLASS_CONTENT[problem] for problem in problems]
    note.add(rng.choice(_NURSING_OPENINGS), " ", _span(_date_text(day, rng, True), DATE), " ",
             rng.choice(_TIMES), "\n")
    note.add(*_name_mentions(patient, rng, True), " IS A ", *_age_phrase(patient.age_on(day), rng, True, patient.male))
    if rng.random() < 0.4:
        note.add(", ", *_transfer(patient, rng, rng.random() < realism))
    note.add(f" W/ HX OF {', '.join(patient.comorbidities)}")
    if rng.random() < 0.5:
        note.add(", S/P ", *_dated(*patient.past_procedure, rng, realism))
    if rng.random() < 0.5:
        note.add(", ", *_history(patient, rng, realism))
    if patient.rare_condition and rng.random() < FACT_SHARE:
        note.add(f", {patient.rare_condition}")
    note.add(". ADMITTED ", _span(_date_text(patient.first_visit, rng, True), DATE),
             f" W/ {', '.join(rng.choice(content.diagnoses) for content in contents)}.")
    if rng.random() < 0.5:
        note.add(" MRN ", _span(patient.mrn, ID), ".")
    note.add(f" {'NKDA' if not patient.allergies else 'ALLERGIES: ' + ', '.join(patient.allergies)}.\n")
    complaints = [rng.choice(content.symptoms) for content in contents]
    denied = rng.choice([symptom for symptom in rng.choice(contents).symptoms if symptom not in complaints])
    note.add(f"C/O {', '.join(complaints)}. DENIES {denied}.\n")
    note.add(f"VS: {_vitals(rng, problems)}. {rng.choice(('VSS', 'VS STABLE', 'HD STABLE'))}.\n")
    for content in contents:
        for observation in rng.sample(content.nursing, rng.randint(2, 4)):
            note.add(observation, ". ")
    medications = [rng.choice(content.medications) for content in contents] + [rng.choice(patient.home_medications)]
    note.add(f"\nMEDS: {', '.join(medications)} GIVEN AS ORDERED")
    if rng.random() < FACT_SHARE:
        note.add(f", {patient.study_drug} PER STUDY PROTOCOL")
    note.add(".\n")
    note.add("SOCIAL: ")
    if rng.random() < FACT_SHARE:
        note.add(*_relative_visit(patient, rng, rng.random() < realism))
        if rng.random() < 0.4:
            note.add(", CELL ", _span(patient.relative[2], PHONE))
        note.add(". ")
    if rng.random() < FACT_SHARE:
        note.add(*_home(patient, rng, rng.random() < realism), ". ")
    for fact in patient.facts:
        if rng.random() < FACT_SHARE / 2:
            note.add(*fact, " ")
    note.add("\n")
    plans = [plan for content in contents for plan in rng.sample(content.plans, rng.randint(1, 2))]
    note.add(f"PLAN: {', '.join(plans)}. ",
             *staff.doctor_for(problems[0], rng).mention(rng, True, rng.random() < realism),
             rng.choice((" AWARE", " NOTIFIED", " PAGED, AWARE", " AT BEDSIDE")), ". ",
             rng.choice(_NURSING_CLOSINGS), ".\n")
    nurse = rng.choice(staff.nurses)
    note.add(*(nurse.signature(rng) if rng.random() < realism else nurse.mention(rng, True)))


def _icu_note(patient: _Patient, day: dt.date, problems: Sequence[str], rng: random.Random, staff: _Staff,
              note: _NoteText, realism: float) -> None:
    """An ICU nursing note as nurses type it: lower case, charted by body system, with headings and some
    lines in capitals, identifiers written informally, and a signature; `problems` as in `_prose_note`."""
    contents = [_CLASS_CONTENT[problem] for problem in problems]
    heading_case = str.upper if rng.random() < 0.6 else _as_written

    def line(*pieces: Piece) -> None:
        note.add(*(_recase(pieces, str.upper) if rng.random() < CAPS_LINE_SHARE else pieces), "\n")

    def informal() -> bool:
        return rng.random() < realism

    if rng.random() < 0.6:
        line(rng.choice(_ICU_OPENINGS), " ", _span(_date_text(day, rng, True), DATE))
    else:
        line(rng.choice(_ICU_OPENINGS))
    subject = [f"{patient.title.lower()} ", _span(patient.last.lower(), NAME)] if rng.random() < 0.3 else ["pt"]
    summary = [*subject, " is a ", _span(str(patient.age_on(day)), AGE),
               f" {rng.choice(('yo', 'y/o'))} {'m' if patient.male else 'f'}"]
    if rng.random() < 0.7:
        summary += [" ", *_transfer(patient, rng, informal())]
    summary += [f" w/ hx {', '.join(patient.comorbidities[:2])}, ", *_history(patient, rng, realism),
                ". admitted ", _span(_date_text(patient.first_visit, rng, True), DATE),
                f" w/ {', '.join(rng.choice(content.diagnoses) for content in contents)}."]
    line(*summary)
    for heading, system in _SYSTEMS:
        if system in problems:
            observations = rng.sample(_CLASS_CONTENT[system].nursing, rng.randint(2, 3))
        else:
            observations = [rng.choice(_UNREMARKABLE[system])]
        line(heading_case(heading), ": ", ". ".join(observations), ".")
    for heading, observations in _OTHER_SYSTEMS:
        if rng.random() < 0.5:
            line(heading_case(heading), ": ", rng.choice(observations), ".")
    medications = [rng.choice(content.medications) for content in contents]
    line(heading_case("meds"), f": {', '.join(medications)} as ordered.")
    social: list[Piece] = []
    if rng.random() < FACT_SHARE:
        social += [*_relative_visit(patient, rng, informal()), ". "]
    if rng.random() < FACT_SHARE:
        social += [*_home(patient, rng, informal()), ". "]
    for fact in patient.facts:
        if rng.random() < FACT_SHARE / 2:
            social += [*fact, " "]
    if social:
        line(heading_case("social"), ": ", *social)
    plans = [plan for content in contents for plan in rng.sample(content.plans, rng.randint(1, 2))]
    back = [", ?d/c back to ", patient.referrer.mention(rng, informal())] if rng.random() < 0.3 else []
    line(heading_case("plan"), f": {', '.join(plans)}", *back, ". ",
         *staff.doctor_for(problems[0], rng).mention(rng, False, informal()),
         rng.choice((" aware", " notified", " paged, aware", " in to see pt")), ". ",
         rng.choice(_NURSING_CLOSINGS), ".")
    nurse = rng.choice(staff.nurses)
    note.add(*(nurse.signature(rng) if informal() else nurse.mention(rng, False)))


def _draw_notes(patient: _Patient, staff: _Staff, rng: random.Random, realism: float) -> list[dict]:
    records = []
    day = patient.first_visit
    for k in range(1, patient.n_notes + 1):
        note_class = patient.main_class if rng.random() < SAME_CLASS_SHARE else rng.choice(CLASSES)
        problems = [note_class]
        if rng.random() < SECOND_PROBLEM_SHARE:
            problems.append(rng.choice([other for other in CLASSES if other != note_class]))
        if rng.random() >= NURSING_NOTE_SHARE:
            write, caps = _prose_note, False
        elif rng.random() < realism:
            write, caps = _icu_note, False
        else:
            write, caps = _nursing_note, True
        note = _NoteText(caps)
        write(patient, day, problems, rng, staff, note, realism)
        records.append({
            "doc_id": f"{patient.user_id}-{k:02d}",
            "user_id": patient.user_id,
            "text": note.text(),
            "label": note_class,
            "phi": note.phi,
        })
        day += dt.timedelta(days=rng.choice((0, 1, 1, 2, 3, 7, 14, 30, 90)))
    return records


def generate_corpus(n_users: int, seed: int = 0, realism: float = REALISM) -> list[dict]:
    """Notes of `n_users` synthetic patients (3 to 12 each), identical for the same (n_users, seed, realism).

    Patient i depends only on (seed, i): a corpus of more patients extends a smaller one unchanged.
    `realism` (0 to 1) is the chance that a mention is written as in real ICU notes (module docstring).
    """
    if not 0 <= realism <= 1:
        raise ValueError(f"realism must be between 0 and 1, got {realism}")
    fake = Faker("en_US")
    staff = _draw_staff(seed, fake, realism)
    records: list[dict] = []
    for index in range(n_users):
        rng = random.Random(f"ppmlm-synth-patient:{seed}:{index}")
        patient = _draw_patient(seed, index, fake, staff, rng, realism)
        records.extend(_draw_notes(patient, staff, rng, realism))
    return records


def write_jsonl(records: list[dict], path) -> None:
    """One JSON object per line, UTF-8, non-ASCII kept as is."""
    with Path(path).open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
